//go:build unix

package lsp_test

import (
	"context"
	"errors"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/lsp"
)

// pendingCalls starts n calls that the fake server never answers and returns their errors.
func pendingCalls(t *testing.T, c *lsp.Client, n int) <-chan error {
	t.Helper()
	errs := make(chan error, n)
	for range n {
		go func() { errs <- c.Call(ctxT(t, 30*time.Second), "test/slow", nil, nil) }()
	}
	time.Sleep(100 * time.Millisecond) // let them reach the server
	return errs
}

func TestCrashMidCall(t *testing.T) {
	e := newEnv(t)
	c := e.start(t, lsp.Config{})
	pending := pendingCalls(t, c, 3)
	begin := time.Now()
	err := c.Call(ctxT(t, 30*time.Second), "test/crash", map[string]any{"code": 3, "stderr": "panic: boom\n\ngoroutine 1 [running]:\nmain.main()\n"}, nil)
	elapsed := time.Since(begin)

	var exit *lsp.ServerExitError
	require.ErrorAs(t, err, &exit)
	assert.ErrorIs(t, err, lsp.ErrServerExited)
	assert.Equal(t, 3, exit.ExitCode)
	assert.Equal(t, "", exit.Signal)
	assert.Equal(t, c.Pid(), exit.Pid)
	assert.Equal(t, fakeServer, exit.Server)
	assert.Contains(t, string(exit.Stderr), "panic: boom")
	assert.False(t, exit.StderrTruncated)
	assert.Contains(t, err.Error(), "exited with code 3")
	assert.Contains(t, err.Error(), `goroutine 1 [running]:\nmain.main()`)
	assert.Less(t, elapsed, 2*time.Second, "the call fails at once")
	for range 3 {
		select {
		case err := <-pending:
			assert.ErrorAs(t, err, &exit)
		case <-time.After(2 * time.Second):
			t.Fatal("a pending call did not fail with the crash")
		}
	}
	select {
	case <-c.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("Done not closed after the crash")
	}
	assert.ErrorAs(t, c.Err(), &exit)
	assert.ErrorIs(t, c.Call(context.Background(), "test/echo", nil, nil), lsp.ErrServerExited)
	assert.ErrorIs(t, c.Notify(context.Background(), "test/echo", nil), lsp.ErrServerExited)

	report, err := c.Shutdown(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, lsp.EndedCrashed, report.Ended)
	assert.Equal(t, 3, report.ExitCode)
	assert.NoError(t, report.ShutdownErr)
	assert.Contains(t, string(report.Stderr.Tail), "panic: boom")
}

func TestKilledMidCall(t *testing.T) {
	e := newEnv(t)
	c := e.start(t, lsp.Config{})
	pending := pendingCalls(t, c, 1)
	err := c.Call(ctxT(t, 30*time.Second), "test/kill", nil, nil)
	var exit *lsp.ServerExitError
	require.ErrorAs(t, err, &exit)
	assert.Equal(t, "SIGKILL", exit.Signal)
	assert.Equal(t, -1, exit.ExitCode)
	assert.Contains(t, err.Error(), "was ended by SIGKILL")
	assert.ErrorAs(t, <-pending, &exit)
	report, err := c.Shutdown(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, lsp.EndedCrashed, report.Ended)
}

// The server closes its stdout and lives on: it is useless, so the client ends it.
func TestServerClosesStdout(t *testing.T) {
	e := newEnv(t)
	c := e.start(t, lsp.Config{Grace: 200 * time.Millisecond})
	pending := pendingCalls(t, c, 1)
	require.NoError(t, c.Call(ctxT(t, 10*time.Second), "test/closestdout", nil, nil))
	var exit *lsp.ServerExitError
	select {
	case err := <-pending:
		require.ErrorAs(t, err, &exit)
		assert.Equal(t, "SIGTERM", exit.Signal)
	case <-time.After(5 * time.Second):
		t.Fatal("pending call not failed")
	}
	report, err := c.Shutdown(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, lsp.EndedCrashed, report.Ended)
	assert.Empty(t, testutil.Marked(e.mark))
}

// A server that stops reading its stdin fills the pipe: writes block, and every call still
// returns by its context; Shutdown still ends the server.
func TestServerStopsReading(t *testing.T) {
	e := newEnv(t)
	c := e.start(t, lsp.Config{ShutdownTimeout: 200 * time.Millisecond, Grace: 200 * time.Millisecond})
	require.NoError(t, c.Call(ctxT(t, 10*time.Second), "test/stopreading", nil, nil))
	big := strings.Repeat("x", 1<<20) // far more than a pipe holds
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		begin := time.Now()
		err := c.Notify(ctx, "test/ignored", big)
		cancel()
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Less(t, time.Since(begin), 2*time.Second)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, c.Call(ctx, "test/echo", 1, nil), context.DeadlineExceeded)
	begin := time.Now()
	report, err := c.Shutdown(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, lsp.EndedTerminated, report.Ended)
	assert.ErrorIs(t, report.ShutdownErr, context.DeadlineExceeded)
	assert.Less(t, time.Since(begin), 3*time.Second)
	assert.Empty(t, testutil.Marked(e.mark))
}

func TestNoReplyToShutdown(t *testing.T) {
	e := newEnv(t)
	c := e.start(t, lsp.Config{ShutdownTimeout: 300 * time.Millisecond, Grace: 300 * time.Millisecond}, "-mode=ignore-shutdown")
	begin := time.Now()
	report, err := c.Shutdown(ctxT(t, 10*time.Second))
	elapsed := time.Since(begin)
	require.NoError(t, err)
	assert.Equal(t, lsp.EndedTerminated, report.Ended)
	assert.Equal(t, "SIGTERM", report.Signal)
	assert.Equal(t, -1, report.ExitCode)
	assert.ErrorIs(t, report.ShutdownErr, context.DeadlineExceeded)
	assert.Contains(t, string(report.Stderr.Tail), "input ended", "stdin was closed after exit")
	assert.Less(t, elapsed, 3*time.Second)
	assert.Empty(t, testutil.Marked(e.mark), "nothing left right after Shutdown")
	assert.ErrorIs(t, c.Err(), lsp.ErrClosed)
	t.Logf("shutdown via SIGTERM took %v", elapsed)
}

func TestNoReplyToShutdownAndIgnoresSIGTERM(t *testing.T) {
	e := newEnv(t)
	c := e.start(t, lsp.Config{ShutdownTimeout: 200 * time.Millisecond, Grace: 300 * time.Millisecond}, "-mode=ignore-term")
	report, err := c.Shutdown(ctxT(t, 20*time.Second))
	require.NoError(t, err)
	assert.Equal(t, lsp.EndedKilled, report.Ended)
	assert.Equal(t, "SIGKILL", report.Signal)
	assert.Empty(t, testutil.Marked(e.mark))
}

// The server exits cleanly but leaves a child in its tree: Shutdown ends the child too.
func TestShutdownEndsLeftoverChild(t *testing.T) {
	e := newEnv(t)
	c := e.start(t, lsp.Config{Grace: 300 * time.Millisecond})
	var child int
	require.NoError(t, c.Call(ctxT(t, 10*time.Second), "test/spawnchild", nil, &child))
	require.NoError(t, syscall.Kill(child, 0))
	report, err := c.Shutdown(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, 0, report.ExitCode, "the server itself exited cleanly")
	assert.Equal(t, lsp.EndedTerminated, report.Ended, "but its child had to be terminated")
	assert.Empty(t, testutil.Marked(e.mark), "the child is gone (a zombie at most, waiting for init)")
}

// A daemon that left the server's process group (setsid) is still ended by Shutdown.
func TestShutdownEndsEscapedDaemon(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("escaped processes are found by their environment, on Linux only")
	}
	e := newEnv(t)
	c := e.start(t, lsp.Config{Grace: 300 * time.Millisecond})
	var daemon int
	require.NoError(t, c.Call(ctxT(t, 10*time.Second), "test/spawndaemon", nil, &daemon))
	require.NoError(t, syscall.Kill(daemon, 0))
	report, err := c.Shutdown(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, 0, report.ExitCode)
	assert.Equal(t, 1, report.Escaped)
	assert.Equal(t, lsp.EndedClean, report.Ended, "the server's own tree left on its own")
	assert.Empty(t, testutil.Marked(e.mark), "the daemon is gone when Shutdown returns")
}

func TestStderrFloodStaysBounded(t *testing.T) {
	e := newEnv(t)
	const tail = 64 << 10
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	c := e.start(t, lsp.Config{StderrTailBytes: tail}, "-flood=100000000")
	// The connection keeps working while stderr floods.
	for i := range 20 {
		var n int
		require.NoError(t, c.Call(ctxT(t, 30*time.Second), "test/echo", i, &n))
		assert.Equal(t, i, n)
	}
	var n int
	require.NoError(t, c.Call(ctxT(t, 60*time.Second), "test/flood", map[string]int{"bytes": 50 << 20}, &n))
	assert.Len(t, c.StderrTail(), tail)
	report, err := c.Shutdown(ctxT(t, 30*time.Second))
	require.NoError(t, err)
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	assert.Equal(t, lsp.EndedClean, report.Ended)
	assert.Len(t, report.Stderr.Tail, tail, "the tail stays at its cap")
	assert.True(t, report.Stderr.Truncated)
	assert.GreaterOrEqual(t, report.Stderr.TotalBytes, int64(50<<20))
	assert.Empty(t, report.Stderr.SpillPath)
	assert.Contains(t, string(report.Stderr.Tail), "fakeserver: bye")
	grew := int64(after.HeapInuse) - int64(before.HeapInuse)
	assert.Less(t, grew, int64(16<<20), "heap grew by %d bytes for %d bytes of stderr", grew, report.Stderr.TotalBytes)
	t.Logf("stderr: %d bytes, tail %d, heap in use grew by %d bytes", report.Stderr.TotalBytes, len(report.Stderr.Tail), grew)
}

func TestStderrSpill(t *testing.T) {
	e := newEnv(t)
	c := e.start(t, lsp.Config{StderrTailBytes: 1024, StderrSpillBytes: 4 << 20})
	require.NoError(t, c.Call(ctxT(t, 30*time.Second), "test/flood", map[string]int{"bytes": 1 << 20}, nil))
	report, err := c.Shutdown(ctxT(t, 30*time.Second))
	require.NoError(t, err)
	require.NotEmpty(t, report.Stderr.SpillPath)
	fi, err := os.Stat(report.Stderr.SpillPath)
	require.NoError(t, err)
	assert.Equal(t, report.Stderr.TotalBytes, fi.Size(), "the spill file holds the whole stream")
	assert.Len(t, report.Stderr.Tail, 1024)
	require.NoError(t, os.Remove(report.Stderr.SpillPath))
}

func TestOversizeFrame(t *testing.T) {
	e := newEnv(t)
	c := e.start(t, lsp.Config{MaxFrameBytes: 8192})
	pending := pendingCalls(t, c, 2)
	err := c.Call(ctxT(t, 10*time.Second), "test/oversize", map[string]int{"size": 8193}, nil)
	require.ErrorIs(t, err, lsp.ErrFrameTooLarge)
	var tl *lsp.FrameTooLargeError
	require.ErrorAs(t, err, &tl)
	assert.Equal(t, lsp.FrameTooLargeError{Size: 8193, Max: 8192}, *tl)
	var ce *lsp.ConnError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "read", ce.Op)
	assert.Contains(t, err.Error(), "frame of 8193 bytes exceeds the cap of 8192 bytes")
	assert.Contains(t, err.Error(), "raise Config.MaxFrameBytes above 8192")
	for range 2 {
		assert.ErrorIs(t, <-pending, lsp.ErrFrameTooLarge)
	}
	// The client terminates the server: Done, then Err says how it ended and why.
	select {
	case <-c.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("Done not closed")
	}
	var exit *lsp.ServerExitError
	require.ErrorAs(t, c.Err(), &exit)
	assert.Equal(t, "SIGTERM", exit.Signal)
	assert.ErrorIs(t, c.Err(), lsp.ErrFrameTooLarge)
	assert.Contains(t, c.Err().Error(), "was terminated after its connection failed")
	report, err := c.Shutdown(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, lsp.EndedTerminated, report.Ended)
	assert.Empty(t, testutil.Marked(e.mark))
}

func TestOversizeFrameDefaultCap(t *testing.T) {
	e := newEnv(t)
	c := e.start(t, lsp.Config{})
	err := c.Call(ctxT(t, 10*time.Second), "test/oversize", map[string]int{"size": 64<<20 + 1}, nil)
	require.ErrorIs(t, err, lsp.ErrFrameTooLarge)
	assert.Contains(t, err.Error(), "exceeds the cap of 67108864 bytes")
}

func TestMalformedFrames(t *testing.T) {
	for method, want := range map[string]string{
		"test/malformed": `bad Content-Length value " abc"`,
		"test/garbage":   `header line without a colon: "this is not a frame"`,
	} {
		t.Run(method, func(t *testing.T) {
			e := newEnv(t)
			c := e.start(t, lsp.Config{})
			pending := pendingCalls(t, c, 1)
			err := c.Call(ctxT(t, 10*time.Second), method, nil, nil)
			require.ErrorIs(t, err, lsp.ErrMalformedFrame)
			assert.NotErrorIs(t, err, lsp.ErrFrameTooLarge)
			assert.Contains(t, err.Error(), want)
			assert.ErrorIs(t, <-pending, lsp.ErrMalformedFrame)
			<-c.Done()
			assert.ErrorIs(t, c.Err(), lsp.ErrServerExited)
			assert.ErrorIs(t, c.Err(), lsp.ErrMalformedFrame)
			report, err := c.Shutdown(ctxT(t, 10*time.Second))
			require.NoError(t, err)
			assert.Equal(t, lsp.EndedTerminated, report.Ended)
		})
	}
}

// A well-framed message that is not JSON is skipped; the stream is still in step.
func TestBadJSONIsSkipped(t *testing.T) {
	e := newEnv(t)
	c := e.start(t, lsp.Config{})
	var s string
	require.NoError(t, c.Call(ctxT(t, 10*time.Second), "test/badjson", nil, &s))
	assert.Equal(t, "after bad json", s)
	require.NoError(t, c.Close())
}

func TestErrorsAreTyped(t *testing.T) {
	e := &lsp.ServerExitError{Server: "srv", Pid: 7, ExitCode: -1, Signal: "SIGSEGV", Stderr: []byte("a\nb\nc\nd\n")}
	assert.Equal(t, `lsp: server srv (pid 7): was ended by SIGSEGV; stderr ends: "b\nc\nd"`, e.Error())
	assert.True(t, errors.Is(e, lsp.ErrServerExited))
	assert.Nil(t, e.Unwrap())
	ce := &lsp.ConnError{Server: "srv", Op: "write", Err: os.ErrClosed}
	assert.ErrorIs(t, ce, os.ErrClosed)
	assert.Equal(t, "lsp: write server srv: file already closed", ce.Error())
}

// A server that leaves after exit in the middle of a frame (gopls sometimes dies between a
// header and its body) has ended cleanly: its exit status says so, nothing is terminated.
func TestCutFrameAfterExitIsClean(t *testing.T) {
	e := newEnv(t)
	c := e.start(t, lsp.Config{}, "-mode=cut-on-exit")
	report, err := c.Shutdown(ctxT(t, 30*time.Second))
	require.NoError(t, err)
	assert.Equal(t, lsp.EndedClean, report.Ended, "stderr: %s", report.Stderr.Tail)
	assert.Equal(t, 0, report.ExitCode)
	assert.NoError(t, report.ShutdownErr)
	assert.ErrorIs(t, c.Err(), lsp.ErrClosed, "no connection failure")
	assert.Empty(t, testutil.Marked(e.mark))
}

// A server that acknowledged shutdown and takes longer than Grace to leave (bash-language-
// server under load) is given ExitTimeout, not terminated.
func TestSlowExitWithinExitTimeout(t *testing.T) {
	e := newEnv(t)
	c := e.start(t, lsp.Config{Grace: 100 * time.Millisecond, ExitTimeout: time.Minute}, "-exit-delay=1s")
	report, err := c.Shutdown(ctxT(t, 2*time.Minute))
	require.NoError(t, err)
	assert.Equal(t, lsp.EndedClean, report.Ended)
	assert.Equal(t, 0, report.ExitCode)
	assert.Empty(t, testutil.Marked(e.mark))
}
