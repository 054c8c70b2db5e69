package backoff

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pauses runs Until under p in a bubble of fake time and returns the pauses between probes,
// the probe reporting done on call n.
func pauses(t *testing.T, p Policy, n int) []time.Duration {
	t.Helper()
	var got []time.Duration
	synctest.Test(t, func(t *testing.T) {
		last := time.Now()
		calls := 0
		err := Until(t.Context(), p, func() (bool, error) {
			calls++
			if calls > 1 {
				got = append(got, time.Since(last))
			}
			last = time.Now()
			return calls == n, nil
		})
		if err != nil {
			t.Fatalf("Until: %v", err)
		}
	})
	return got
}

func TestUntilStartsFastAndBacksOffToTheCap(t *testing.T) {
	ms := time.Millisecond
	got := pauses(t, Policy{First: ms, Max: 8 * ms}, 7)
	want := []time.Duration{ms, 2 * ms, 4 * ms, 8 * ms, 8 * ms, 8 * ms}
	if len(got) != len(want) {
		t.Fatalf("pauses %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("pauses %v, want %v", got, want)
		}
		if p := (Policy{First: ms, Max: 8 * ms}).Nth(i); p != want[i] {
			t.Errorf("Nth(%d) = %v, want %v", i, p, want[i])
		}
	}
	w := Policy{First: ms, Max: 8 * ms}.Start()
	for i := range want {
		if p := w.Next(); p != want[i] {
			t.Errorf("Nth(%d) = %v, want %v", i, p, want[i])
		}
	}
}

func TestZeroPolicyCapGrowsWithTheTimeWaited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := Policy{}.Start()
		var d time.Duration
		for range 5 {
			start := time.Now()
			if err := w.Wait(t.Context()); err != nil {
				t.Fatal(err)
			}
			d = time.Since(start)
		}
		if d != 2*time.Millisecond {
			t.Fatalf("pause in the first second = %v, want 2ms", d)
		}
		if err := Sleep(t.Context(), 2*time.Minute); err != nil { // fake time: the wait has gone on for minutes
			t.Fatal(err)
		}
		for range 10 {
			start := time.Now()
			if err := w.Wait(t.Context()); err != nil {
				t.Fatal(err)
			}
			d = time.Since(start)
		}
		if d != 250*time.Millisecond {
			t.Fatalf("pause after minutes = %v, want 250ms", d)
		}
	})
}

func TestUntilEndsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() {
			done <- Until(ctx, Policy{Max: time.Hour, First: time.Hour}, func() (bool, error) { return false, nil })
		}()
		synctest.Wait() // Until is paused
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("Until = %v, want context.Canceled", err)
		}
	})
}

func TestUntilReturnsTheProbesError(t *testing.T) {
	boom := errors.New("boom")
	err := Until(t.Context(), Policy{}, func() (bool, error) { return false, boom })
	if !errors.Is(err, boom) {
		t.Fatalf("Until = %v, want %v", err, boom)
	}
}

func TestUntilProbesOnceEvenUnderAnEndedContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := Until(ctx, Policy{}, func() (bool, error) { return true, nil }); err != nil {
		t.Fatalf("Until of a wait already over = %v, want nil", err)
	}
	if err := Until(ctx, Policy{}, func() (bool, error) { return false, nil }); !errors.Is(err, context.Canceled) {
		t.Fatalf("Until = %v, want context.Canceled", err)
	}
}

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := Sleep(t.Context(), time.Second); err != nil || time.Since(start) != time.Second {
			t.Fatalf("Sleep = %v after %v, want nil after 1s", err, time.Since(start))
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
			t.Fatalf("Sleep under an ended context = %v", err)
		}
	})
}
