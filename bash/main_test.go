package bash_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/subkit/subkit/bash"
	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/subprocess"
)

func TestMain(m *testing.M) {
	subprocess.HelperMain() // the test binary is the sandbox's and the guard's helper
	goleak.VerifyTestMain(m)
}

// newExecutor returns an Executor whose commands carry a fresh test mark, with its runtime
// and spill dirs inside the test's temp dirs, closed at the end of the test; the leak checks
// (no marked process, no descriptor, no runtime dir left) run after that.
func newExecutor(t *testing.T, cfg bash.Config) (*bash.Executor, string) {
	t.Helper()
	mark := testutil.Mark()
	testutil.NoLeaks(t, mark)
	if cfg.Env == nil {
		cfg.Env = testutil.Env(mark)
	} else {
		cfg.Env = append(cfg.Env, testutil.MarkVar+"="+mark)
	}
	if cfg.TempDir == "" {
		cfg.TempDir = t.TempDir()
		testutil.EmptyDir(t, cfg.TempDir)
	}
	if cfg.SpillDir == "" {
		cfg.SpillDir = t.TempDir()
	}
	e, err := bash.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	return e, mark
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond for up to d.
func eventually(t *testing.T, d time.Duration, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s", d, msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// start runs a command in the background, closed at the end of the test.
func start(t *testing.T, e *bash.Executor, command string) *bash.Process {
	t.Helper()
	p, err := e.Start(context.Background(), bash.Request{Command: command})
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

// readAll follows a process with its own cursor, max bytes at a time, until it is done,
// waiting for output (WaitOutput) between reads.
func readAll(t *testing.T, p *bash.Process, from bash.Offsets, max int) (stdout, stderr []byte, last bash.Delta) {
	t.Helper()
	ctx := ctxT(t, time.Minute)
	for {
		d, err := p.WaitOutput(ctx, from, max)
		require.NoError(t, err, "no end in sight")
		assert.Zero(t, d.Stdout.Dropped)
		assert.Equal(t, from.Stdout, d.Stdout.From)
		stdout = append(stdout, d.Stdout.Data...)
		stderr = append(stderr, d.Stderr.Data...)
		from = d.Next
		if d.Done() {
			return stdout, stderr, d
		}
	}
}

// exec runs a command in the foreground and requires that it ran.
func exec(t *testing.T, e *bash.Executor, req bash.Request) bash.Result {
	t.Helper()
	res, err := e.Exec(ctxT(t, 60*time.Second), req)
	require.NoError(t, err)
	return res
}
