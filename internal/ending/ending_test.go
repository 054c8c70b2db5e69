package ending

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fake is a target of one member that ends on the steps it obeys.
type fake struct {
	mu      sync.Mutex
	obeys   map[Step]bool
	alive   bool
	steps   []Step
	at      []time.Duration
	start   time.Time
	sigErr  error
	more    int // rediscoveries that find another fake
	refound []*fake
}

func newFake(obeys ...Step) *fake {
	f := &fake{obeys: map[Step]bool{}, alive: true, start: time.Now()}
	for _, s := range obeys {
		f.obeys[s] = true
	}
	return f
}

func (f *fake) Signal(_ context.Context, s Step) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.steps = append(f.steps, s)
	f.at = append(f.at, time.Since(f.start))
	if f.obeys[s] {
		f.alive = false
	}
	return f.sigErr
}

func (f *fake) Alive(context.Context) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.alive, nil
}

type refinding struct{ *fake }

func (r refinding) Rediscover(context.Context) (Target, error) {
	if r.more == 0 {
		return nil, nil
	}
	r.more--
	n := newFake(Kill)
	r.refound = append(r.refound, n)
	return refinding{n}, nil
}

func TestATargetThatObeysStopIsNotKilled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(Stop)
		if err := (Policy{Grace: time.Second}).End(t.Context(), f); err != nil {
			t.Fatal(err)
		}
		if len(f.steps) != 1 || f.steps[0] != Stop {
			t.Fatalf("steps %v, want [stop]", f.steps)
		}
	})
}

func TestKillComesAfterTheGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake(Kill)
		if err := (Policy{Grace: 3 * time.Second}).End(t.Context(), f); err != nil {
			t.Fatal(err)
		}
		if len(f.steps) != 2 || f.steps[1] != Kill || f.at[1] != 3*time.Second {
			t.Fatalf("steps %v at %v, want [stop kill] at [0 3s]", f.steps, f.at)
		}
	})
}

func TestHurryEndsTheGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		hurry, now := context.WithCancel(t.Context())
		f := newFake(Kill)
		done := make(chan error)
		go func() { done <- (Policy{Grace: time.Hour, Hurry: hurry}).End(t.Context(), f) }()
		synctest.Wait() // End waits out the grace
		now()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if len(f.steps) != 2 || f.at[1] != 0 {
			t.Fatalf("steps %v at %v, want a kill at once", f.steps, f.at)
		}
		// A hurried policy gives no grace at all.
		g := newFake(Kill)
		if err := (Policy{Grace: time.Hour, Hurry: hurry}).End(t.Context(), g); err != nil || g.at[1] != 0 {
			t.Fatalf("End = %v, steps at %v", err, g.at)
		}
	})
}

func TestAKillThatDoesNotTakeIsReported(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFake()
		f.sigErr = errors.New("refused")
		err := (Policy{Grace: time.Second}).End(t.Context(), f)
		if !errors.Is(err, ErrStillPresent) || !errors.Is(err, f.sigErr) {
			t.Fatalf("End = %v, want ErrStillPresent and the signal errors", err)
		}
		if time.Since(f.start) != time.Second+KillWait {
			t.Fatalf("End took %v, want the grace and KillWait", time.Since(f.start))
		}
	})
}

func TestTheCallersContextEndsEverything(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		f := newFake()
		done := make(chan error)
		go func() { done <- (Policy{Grace: time.Hour}).End(ctx, f) }()
		synctest.Wait()
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) || errors.Is(err, ErrStillPresent) {
			t.Fatalf("End = %v, want context.Canceled", err)
		}
		if len(f.steps) != 1 {
			t.Fatalf("steps %v: no kill once the caller gave up", f.steps)
		}
	})
}

func TestRediscoveredMembersAreEndedInTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := refinding{newFake(Kill)}
		f.more = 2
		if err := (Policy{Grace: time.Second}).End(t.Context(), f); err != nil {
			t.Fatal(err)
		}
		if len(f.refound) != 1 {
			t.Fatalf("%d rediscovered targets, want 1 (each target rediscovers its own)", len(f.refound))
		}
		if r := f.refound[0]; len(r.steps) != 2 || r.steps[1] != Kill || r.at[1] != r.at[0] {
			t.Fatalf("rediscovered target got %v at %v, want [stop kill] at once: the grace was spent", r.steps, r.at)
		}
	})
}

// endless rediscovers a new member every time.
type endless struct{ n *int }

func (endless) Signal(context.Context, Step) error           { return nil }
func (endless) Alive(context.Context) (bool, error)          { return false, nil }
func (e endless) Rediscover(context.Context) (Target, error) { *e.n++; return e, nil }

func TestRediscoveryIsBounded(t *testing.T) {
	n := 0
	err := (Policy{}).End(t.Context(), endless{&n})
	if err == nil || n != MaxRounds+1 {
		t.Fatalf("End = %v after %d rediscoveries, want an error after %d", err, n, MaxRounds+1)
	}
}
