package subprocess_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/subprocess"
)

func TestRunAndExitError(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	res, err := subprocess.Run(context.Background(), svc, sh(`echo hi`))
	require.NoError(t, err)
	assert.True(t, res.Success())
	assert.NoError(t, res.Err())
	assert.Equal(t, "hi\n", string(res.Stdout.Tail))

	res, err = subprocess.Run(context.Background(), svc, sh(`echo oops >&2; exit 3`))
	require.NoError(t, err, "a failed program is no error of Run")
	assert.False(t, res.Success())
	var ee *subprocess.ExitError
	require.ErrorAs(t, res.Err(), &ee)
	assert.Equal(t, "exit status 3", ee.Error())
	assert.Equal(t, 3, ee.Outcome.ExitCode)
	assert.False(t, res.Cancelled, "it exited by itself")

	res, err = subprocess.Run(context.Background(), svc, sh(`kill -KILL $$`))
	require.NoError(t, err)
	assert.EqualError(t, res.Err(), "signal: SIGKILL")

	spec := sh(`sleep 1000`)
	spec.Timeout = 50 * time.Millisecond
	res, err = subprocess.Run(context.Background(), svc, spec)
	require.NoError(t, err)
	assert.True(t, res.TimedOut)
	assert.False(t, res.Cancelled, "the timeout ended it, not the caller")
	assert.Contains(t, res.Err().Error(), "timed out after")

	// The caller gives up once the program has started (its output says so).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	spec = sh(`echo started; exec sleep 1000`)
	var seen []byte
	spec.Stdout.Tee = writerFunc(func(p []byte) (int, error) {
		if seen = append(seen, p...); strings.Contains(string(seen), "started\n") {
			cancel()
		}
		return len(p), nil
	})
	res, err = subprocess.Run(ctx, svc, spec)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, "SIGTERM", res.Signal, "the tree was terminated and its result returned")
	assert.True(t, res.Cancelled)
	assert.Contains(t, res.Err().Error(), "cancelled after")
	assert.Equal(t, "started\n", string(res.Stdout.Tail))

	// Terminate before the result settles is a cancellation; after, it changes nothing.
	h, err := svc.Spawn(context.Background(), sh(`exec sleep 1000`))
	require.NoError(t, err)
	require.NoError(t, h.Terminate(context.Background()))
	res, err = h.Wait(context.Background())
	require.NoError(t, err)
	assert.True(t, res.Cancelled)
	assert.False(t, res.Success())
	h.Close()
	h, err = svc.Spawn(context.Background(), sh(`true`))
	require.NoError(t, err)
	_, err = h.Wait(context.Background())
	require.NoError(t, err)
	require.NoError(t, h.Terminate(context.Background()))
	res, err = h.Wait(context.Background())
	require.NoError(t, err)
	assert.False(t, res.Cancelled, "it had settled")
	assert.True(t, res.Success())
	h.Close()

	_, err = subprocess.Run(nil, svc, sh(`true`)) //nolint:staticcheck // the nil context is the test
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	_, err = subprocess.Run(context.Background(), nil, sh(`true`))
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
}

// Usage comes from the leader's wait status, locally and through the guard.
func TestRunUsage(t *testing.T) {
	for _, guard := range []bool{false, true} {
		svc := newService(t, subprocess.Config{Guard: guard})
		// 64 MiB touched, and CPU spent in user mode until it shows.
		res, err := subprocess.Run(context.Background(), svc, subprocess.Spec{Path: "python3", Args: []string{"-c",
			`import time, resource
b = bytearray(64 << 20)
for i in range(0, len(b), 4096): b[i] = 1
while resource.getrusage(resource.RUSAGE_SELF).ru_utime < 0.05: pass`}})
		require.NoError(t, err)
		require.NoError(t, res.Err(), "guard %v: %s", guard, res.Stderr.Tail)
		assert.GreaterOrEqual(t, res.Usage.MaxRSS, int64(64<<20), "guard %v", guard)
		assert.GreaterOrEqual(t, res.Usage.User, 50*time.Millisecond, "guard %v", guard)
		assert.Less(t, res.Usage.MaxRSS, int64(1<<30), "guard %v: KiB taken for bytes", guard)
	}
	var ee *subprocess.ExitError
	assert.False(t, errors.As(subprocess.Result{}.Err(), &ee), "a zero Result is a success")
}

func TestInputReader(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	big := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB, more than a pipe holds
	spec := sh(`wc -c`)
	spec.Stdin = subprocess.Input{Kind: subprocess.InputReader, Reader: strings.NewReader(big)}
	res := run(t, svc, spec)
	assert.Equal(t, "1048576", strings.TrimSpace(string(res.Stdout.Tail)))
	assert.NoError(t, res.StdinErr)

	// A Reader that fails: the child sees its stdin end, the Result says why.
	pr, pw := io.Pipe()
	go func() { pw.Write([]byte("part\n")); pw.CloseWithError(errors.New("source broke")) }()
	spec = sh(`cat`)
	spec.Stdin = subprocess.Input{Kind: subprocess.InputReader, Reader: pr}
	res = run(t, svc, spec)
	assert.Equal(t, "part\n", string(res.Stdout.Tail))
	assert.EqualError(t, res.StdinErr, "source broke")

	// A Reader that never returns does not hold the result of a child that does not read.
	block, unblock := io.Pipe()
	t.Cleanup(func() { unblock.Close() })
	spec = sh(`exit 4`)
	spec.Stdin = subprocess.Input{Kind: subprocess.InputReader, Reader: block}
	assert.Equal(t, 4, run(t, svc, spec).ExitCode)

	// A child that exits unread is no error.
	spec = sh(`exit 0`)
	spec.Stdin = subprocess.Input{Kind: subprocess.InputReader, Reader: strings.NewReader(big)}
	assert.NoError(t, run(t, svc, spec).StdinErr)

	for _, in := range []subprocess.Input{
		{Kind: subprocess.InputReader},
		{Kind: subprocess.InputBytes, Reader: strings.NewReader("x")},
		{Kind: subprocess.InputReader + 1},
	} {
		spec := sh(`true`)
		spec.Stdin = in
		_, err := svc.Spawn(context.Background(), spec)
		assert.ErrorIs(t, err, subprocess.ErrInvalid, "%+v", in)
	}
}

// Hurry ends the grace of a Terminate in progress, and of those to come.
func TestHurry(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	spawn := func() *subprocess.Handle {
		spec := sh(`trap 'echo got-term' TERM; echo ready; while :; do sleep 0.01; done`)
		spec.Grace = time.Hour
		h, err := svc.Spawn(context.Background(), spec)
		require.NoError(t, err)
		_, err = h.WaitOutput(ctxT(t, 10*time.Second), subprocess.Stdout, 0, 0)
		require.NoError(t, err)
		return h
	}
	h := spawn()
	done := make(chan error, 1)
	go func() { done <- h.Terminate(context.Background()) }()
	// The Terminate has sent SIGTERM, which the shell survives, and waits out its hour.
	var out strings.Builder
	for next := int64(0); !strings.Contains(out.String(), "got-term"); {
		d, err := h.WaitOutput(ctxT(t, 10*time.Second), subprocess.Stdout, next, 0)
		require.NoError(t, err)
		out.Write(d.Data)
		next = d.Next
	}
	svc.Hurry()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("Hurry did not end the grace")
	}
	res, err := h.Wait(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, "SIGKILL", res.Signal)
	require.NoError(t, h.Close())

	h = spawn()
	require.NoError(t, h.Terminate(ctxT(t, 30*time.Second)), "a Terminate after Hurry has no grace")
	require.NoError(t, h.Close())
	(*subprocess.Service)(nil).Hurry() // a nil Service: nothing, no panic
}

// writerFunc is an io.Writer made of a function.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
