package runtimetest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/coderuntime"
	"github.com/subkit/subkit/internal/testutil"
)

// cellBound is the timeout of the suite's cells that are meant to end on their own: far above
// what they take, so only a cell that hangs reaches it.
const cellBound = time.Minute

// RunSessions runs the session contract suite against the runtimes newRuntime returns, for
// each of python3 and node that SessionLanguages lists (at least one must be).
func RunSessions(t *testing.T, newRuntime func(t *testing.T) SessionRuntime) {
	t.Helper()
	var langs []coderuntime.Language
	t.Run("SessionLanguages", func(t *testing.T) {
		e := sessionSetup(t, newRuntime, "")
		langs = e.rt.SessionLanguages()
		require.True(t, slices.ContainsFunc(langs, func(l coderuntime.Language) bool {
			_, ok := sessionSnippetsFor(l)
			return ok
		}), "SessionLanguages %v lists neither python3 nor node: the suite has nothing to run", langs)
		assert.NotContains(t, langs, coderuntime.Bash, "bash sessions are shell sessions")
	})
	for _, lang := range []coderuntime.Language{coderuntime.Python3, coderuntime.Node} {
		t.Run(string(lang), func(t *testing.T) {
			if !slices.Contains(langs, lang) {
				t.Skipf("the runtime has no %s sessions (SessionLanguages: %v)", lang, langs)
			}
			for _, c := range sessionCases() {
				t.Run(c.name, func(t *testing.T) {
					e := sessionSetup(t, newRuntime, lang)
					if c.needs != nil && c.needs(e.code) == "" {
						t.Skipf("no %s snippet for %s", c.name, lang)
					}
					c.run(t, e)
				})
			}
		})
	}
}

// sessionEnv is one subtest's runtime, and what it needs to open sessions and run cells.
type sessionEnv struct {
	rt     SessionRuntime
	lang   coderuntime.Language
	code   sessionSnippets
	mark   string
	secret string
}

type sessionCase struct {
	name  string
	needs func(s sessionSnippets) string
	run   func(t *testing.T, e *sessionEnv)
}

// sessionSetup makes a fresh runtime for one subtest and registers the leak checks, as setup
// does for runtimes.
func sessionSetup(t *testing.T, newRuntime func(t *testing.T) SessionRuntime, lang coderuntime.Language) *sessionEnv {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() { noGoroutineLeak(t, before) })
	e := &sessionEnv{lang: lang, mark: testutil.Mark(), secret: "subkit-runtimetest-" + testutil.Mark()}
	e.code, _ = sessionSnippetsFor(lang)
	t.Setenv(SecretVar, e.secret)
	testutil.NoLeaks(t, e.mark)
	e.rt = newRuntime(t)
	require.NotNil(t, e.rt, "newRuntime returned nil")
	t.Cleanup(func() {
		assert.NoError(t, e.rt.Close(), "Close")
		assert.NotPanics(t, func() { e.rt.Close() }, "a second Close")
	})
	return e
}

// open starts a session marked with the subtest's mark; it is closed (twice) at cleanup.
func (e *sessionEnv) open(t *testing.T, cfg coderuntime.SessionConfig) coderuntime.Session {
	t.Helper()
	cfg.Language = e.lang
	cfg.Env = append(slices.Clip(cfg.Env), testutil.MarkVar+"="+e.mark)
	ctx, cancel := context.WithTimeout(context.Background(), runBound)
	defer cancel()
	s, err := e.rt.NewSession(ctx, cfg)
	require.NoError(t, err)
	require.Equal(t, e.lang, s.Language())
	t.Cleanup(func() {
		assert.NoError(t, s.Close(), "Close")
		assert.NoError(t, s.Close(), "a second Close")
	})
	return s
}

// run runs code in s with callbacks cb, requiring no Go error.
func (e *sessionEnv) run(t *testing.T, s coderuntime.Session, code string, cb coderuntime.Callbacks) coderuntime.Execution {
	t.Helper()
	return e.runCell(t, s, coderuntime.Cell{Code: code, Timeout: cellBound}, cb)
}

func (e *sessionEnv) runCell(t *testing.T, s coderuntime.Session, cell coderuntime.Cell, cb coderuntime.Callbacks) coderuntime.Execution {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runBound)
	defer cancel()
	ex, err := s.Run(ctx, cell, cb)
	require.NoError(t, err)
	return ex
}

// ok runs code and requires that it ended on its own, without an error.
func (e *sessionEnv) ok(t *testing.T, s coderuntime.Session, code string) coderuntime.Execution {
	t.Helper()
	ex := e.run(t, s, code, coderuntime.Callbacks{})
	require.Nil(t, ex.Error, "cell %q: stderr %q", code, ex.Stderr.Tail)
	require.False(t, ex.TimedOut || ex.Cancelled || ex.Interrupted || ex.Restarted, "cell %q: %+v", code, ex)
	return ex
}

// mainText returns the text/plain of the Execution's main result, failing when there is not
// exactly one.
func mainText(t *testing.T, ex coderuntime.Execution) string {
	t.Helper()
	var mains []coderuntime.CellResult
	for _, r := range ex.Results {
		if r.Main {
			mains = append(mains, r)
		}
	}
	require.Len(t, mains, 1, "main results of %+v", ex)
	return mains[0].MIME["text/plain"]
}

// noProcesses fails when a process carrying the mark is alive (on Linux).
func (e *sessionEnv) noProcesses(t *testing.T) {
	t.Helper()
	if !settles(3*time.Second, func() bool { return len(testutil.Marked(e.mark)) == 0 }) {
		t.Errorf("processes of the session still alive: %v", testutil.Marked(e.mark))
	}
}

type runOutcome struct {
	ex  coderuntime.Execution
	err error
}

func sessionCases() []sessionCase {
	return []sessionCase{
		{"StateAndMainResult", nil, func(t *testing.T, e *sessionEnv) {
			s := e.open(t, coderuntime.SessionConfig{})
			ex := e.ok(t, s, e.code.assign41)
			assert.Equal(t, 1, ex.ExecutionCount)
			assert.Empty(t, ex.Results, "an assignment has no value")
			ex = e.ok(t, s, e.code.plus1)
			assert.Equal(t, 2, ex.ExecutionCount)
			assert.Equal(t, "42", mainText(t, ex), "the trailing expression is the main result")
			ex = e.ok(t, s, e.code.statement)
			assert.Equal(t, 3, ex.ExecutionCount)
			assert.Empty(t, ex.Results)
			assert.Empty(t, ex.Stdout.Tail)
			assert.Positive(t, ex.Duration)
		}},
		{"ErrorKeepsSession", func(s sessionSnippets) string { return s.raise }, func(t *testing.T, e *sessionEnv) {
			s := e.open(t, coderuntime.SessionConfig{})
			e.ok(t, s, e.code.assign41)
			cwd := strings.TrimSpace(e.ok(t, s, e.code.printCwd).Stdout.Tail)
			ex := e.run(t, s, e.code.raise, coderuntime.Callbacks{})
			require.NotNil(t, ex.Error, "stderr: %s", ex.Stderr.Tail)
			assert.Equal(t, 3, ex.ExecutionCount)
			assert.Equal(t, e.code.raiseName, ex.Error.Name)
			assert.Equal(t, "bad value", ex.Error.Value)
			tb := ex.Error.Traceback
			assert.Contains(t, tb, "<cell-3>", "the traceback names the cell")
			assert.Contains(t, tb, e.code.raiseIn, "and the raising frame")
			assert.Contains(t, tb, "bad value")
			assert.NotContains(t, tb, "driver", "the driver's frames are cut")
			assert.NotContains(t, tb, filepath.Dir(cwd), "no private path")
			assert.False(t, ex.Restarted || ex.Interrupted)
			assert.Equal(t, "42", mainText(t, e.ok(t, s, e.code.plus1)), "the session goes on, its state intact")

			ex = e.run(t, s, e.code.syntax, coderuntime.Callbacks{})
			require.NotNil(t, ex.Error)
			assert.Equal(t, "SyntaxError", ex.Error.Name)
			assert.Empty(t, ex.Stdout.Tail, "no line of a cell that does not compile runs")
			assert.NotContains(t, ex.Error.Traceback+ex.Error.Value, filepath.Dir(cwd))
		}},
		{"OutputPerCell", func(s sessionSnippets) string { return s.outErr }, func(t *testing.T, e *sessionEnv) {
			s := e.open(t, coderuntime.SessionConfig{})
			ex := e.ok(t, s, e.code.outErr)
			assert.Equal(t, "out\n", ex.Stdout.Tail)
			assert.Equal(t, "err\n", ex.Stderr.Tail)
			assert.EqualValues(t, 4, ex.Stdout.TotalBytes)
			assert.False(t, ex.Stdout.Truncated)
			ex = e.ok(t, s, e.code.other)
			assert.Equal(t, "other\n", ex.Stdout.Tail, "a cell's output is its own")
			assert.Empty(t, ex.Stderr.Tail)
		}},
		{"CallbacksAsTheyHappen", func(s sessionSnippets) string { return s.firstWaitF }, func(t *testing.T, e *sessionEnv) {
			s := e.open(t, coderuntime.SessionConfig{})
			file := filepath.Join(t.TempDir(), "go-on")
			var mu sync.Mutex
			var seen strings.Builder
			ex := e.run(t, s, e.code.firstWait(file), coderuntime.Callbacks{Stdout: func(text string) {
				mu.Lock()
				defer mu.Unlock()
				seen.WriteString(text)
				if strings.Contains(seen.String(), "first\n") {
					// The cell waits for this file: it ends only if the first line came first.
					assert.NoError(t, os.WriteFile(file, nil, 0o600))
				}
			}})
			assert.False(t, ex.TimedOut, "the callback never saw the first line while the cell ran")
			assert.Equal(t, "first\nsecond\n", ex.Stdout.Tail)
			mu.Lock()
			assert.Equal(t, "first\nsecond\n", seen.String(), "the callbacks see the whole output")
			mu.Unlock()

			var order []string
			ex = e.run(t, s, e.code.display+"\n"+e.code.raise, coderuntime.Callbacks{
				Result: func(r coderuntime.CellResult) { order = append(order, "result "+r.MIME["text/html"]) },
				Error:  func(ce coderuntime.CodeError) { order = append(order, "error "+ce.Name) },
			})
			require.NotNil(t, ex.Error)
			assert.Equal(t, []string{"result <b>hi</b>", "error " + e.code.raiseName}, order)
		}},
		{"Display", func(s sessionSnippets) string { return s.display }, func(t *testing.T, e *sessionEnv) {
			s := e.open(t, coderuntime.SessionConfig{})
			ex := e.ok(t, s, e.code.display)
			require.Len(t, ex.Results, 2)
			assert.False(t, ex.Results[0].Main)
			assert.Equal(t, "<b>hi</b>", ex.Results[0].MIME["text/html"])
			assert.Contains(t, ex.Results[0].MIME, "text/plain", "text/plain is always there")
			assert.True(t, ex.Results[1].Main)
			assert.Equal(t, "5", ex.Results[1].MIME["text/plain"])
		}},
		{"InterruptKeepsState", func(s sessionSnippets) string { return s.busy }, func(t *testing.T, e *sessionEnv) {
			s := e.open(t, coderuntime.SessionConfig{Grace: cellBound}) // the probe always answers in time
			e.ok(t, s, e.code.assign41)
			ex := e.runCell(t, s, coderuntime.Cell{Code: e.code.busy, Timeout: time.Second}, coderuntime.Callbacks{})
			assert.True(t, ex.TimedOut)
			assert.True(t, ex.Interrupted)
			assert.False(t, ex.Restarted, "the interrupt reached the busy loop")
			assert.Nil(t, ex.InterpreterExit)
			assert.NotNil(t, ex.Error, "the interrupt is the cell's error")
			ex = e.ok(t, s, e.code.plus1)
			assert.Equal(t, "42", mainText(t, ex), "the state survives the interrupt")
			assert.Equal(t, 3, ex.ExecutionCount)
		}},
		{"CancelInterrupts", func(s sessionSnippets) string { return s.readyF }, func(t *testing.T, e *sessionEnv) {
			s := e.open(t, coderuntime.SessionConfig{Grace: cellBound})
			e.ok(t, s, e.code.assign41)
			ready := filepath.Join(t.TempDir(), "ready")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan runOutcome, 1)
			go func() {
				ex, err := s.Run(ctx, coderuntime.Cell{Code: e.code.ready(ready), Timeout: cellBound}, coderuntime.Callbacks{})
				done <- runOutcome{ex, err}
			}()
			waitFile(t, ready, done)
			cancel()
			o := <-done
			require.NoError(t, o.err, "a cancelled cell is an Execution, not an error")
			assert.True(t, o.ex.Cancelled)
			assert.False(t, o.ex.TimedOut)
			assert.True(t, o.ex.Interrupted)
			assert.False(t, o.ex.Restarted)
			assert.Equal(t, "42", mainText(t, e.ok(t, s, e.code.plus1)))

			_, err := s.Run(ctx, coderuntime.Cell{Code: e.code.getX}, coderuntime.Callbacks{})
			assert.ErrorIs(t, err, context.Canceled, "a ctx ended before the cell is an error")
		}},
		{"NativeBlockRestarts", func(s sessionSnippets) string { return posixOnly(s.blockF) }, func(t *testing.T, e *sessionEnv) {
			s := e.open(t, coderuntime.SessionConfig{Grace: time.Second})
			e.ok(t, s, e.code.assign41)
			ready := filepath.Join(t.TempDir(), "ready")
			ex := e.runCell(t, s, coderuntime.Cell{Code: e.code.block(ready), Timeout: time.Second}, coderuntime.Callbacks{})
			_, err := os.Stat(ready)
			require.NoError(t, err, "the cell ran up to its block")
			assert.True(t, ex.TimedOut)
			assert.True(t, ex.Interrupted)
			assert.True(t, ex.Restarted, "a cell deaf to SIGINT restarts the interpreter")
			assert.NotNil(t, ex.InterpreterExit)
			e.noProcesses(t) // the interpreter and the sleep the cell started
			ex = e.run(t, s, e.code.getX, coderuntime.Callbacks{})
			assert.Equal(t, 1, ex.ExecutionCount, "a fresh interpreter")
			require.NotNil(t, ex.Error, "the state is gone")
			assert.Equal(t, e.code.undefined, ex.Error.Name)
			assert.False(t, ex.Restarted, "the restart was reported once")
		}},
		{"LargeOutputBounded", func(s sessionSnippets) string { return s.big }, func(t *testing.T, e *sessionEnv) {
			const size = 100_000_000
			s := e.open(t, coderuntime.SessionConfig{StdoutBytes: 4096})
			stop := make(chan struct{})
			peak := make(chan uint64, 1)
			// What earlier tests left must not count as this cell's: a pool's buffers (the
			// 64 MiB frame of a framing test in encoding/json's) go at the second collection.
			runtime.GC()
			runtime.GC()
			go func() { peak <- peakHeap(stop) }()
			ex := e.ok(t, s, e.code.big)
			close(stop)
			p := <-peak
			assert.EqualValues(t, size+4, ex.Stdout.TotalBytes)
			assert.True(t, ex.Stdout.Truncated)
			assert.LessOrEqual(t, len(ex.Stdout.Tail), 4096)
			assert.True(t, strings.HasSuffix(ex.Stdout.Tail, "xxxxEND\n"), "the tail is the end of the stream")
			assert.Equal(t, "'done'", mainText(t, ex), "results travel apart from the output")
			assert.Less(t, p, uint64(64<<20), "heap peaked at %d bytes while the cell wrote %d", p, size)
			t.Logf("heap peak %d KiB while the cell wrote 100 MB", p>>10)
			assert.Equal(t, "other\n", e.ok(t, s, e.code.other).Stdout.Tail, "the next cell's output is its own")
		}},
		{"Restart", nil, func(t *testing.T, e *sessionEnv) {
			s := e.open(t, coderuntime.SessionConfig{})
			e.ok(t, s, e.code.assign41)
			ctx, cancel := context.WithTimeout(context.Background(), runBound)
			defer cancel()
			require.NoError(t, s.Restart(ctx))
			ex := e.run(t, s, e.code.getX, coderuntime.Callbacks{})
			assert.Equal(t, 1, ex.ExecutionCount)
			require.NotNil(t, ex.Error, "Restart resets the state")
			assert.Equal(t, e.code.undefined, ex.Error.Name)
			assert.False(t, ex.Restarted, "a Restart asked for is not reported by the next cell")
			e.ok(t, s, e.code.assign41)
			assert.Equal(t, "42", mainText(t, e.ok(t, s, e.code.plus1)))
		}},
		{"WorkingDirectoryPersists", func(s sessionSnippets) string { return s.chdirF }, func(t *testing.T, e *sessionEnv) {
			s := e.open(t, coderuntime.SessionConfig{})
			start := strings.TrimSpace(e.ok(t, s, e.code.printCwd).Stdout.Tail)
			dir, err := filepath.EvalSymlinks(t.TempDir())
			require.NoError(t, err)
			e.ok(t, s, e.code.chdir(dir))
			assert.Equal(t, dir+"\n", e.ok(t, s, e.code.printCwd).Stdout.Tail)
			if runtime.GOOS != "windows" {
				fi, err := os.Stat(start)
				require.NoError(t, err)
				assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm(), "the session's own directory is private")
			}
			require.NoError(t, s.Close())
			_, err = os.Stat(start)
			assert.True(t, errors.Is(err, os.ErrNotExist), "Close removes the session's directory (%v)", err)
		}},
		{"InterpreterExit", func(s sessionSnippets) string { return s.exit3 }, func(t *testing.T, e *sessionEnv) {
			s := e.open(t, coderuntime.SessionConfig{})
			e.ok(t, s, e.code.assign41)
			ex := e.run(t, s, e.code.exit3, coderuntime.Callbacks{})
			assert.True(t, ex.Restarted)
			require.NotNil(t, ex.InterpreterExit)
			assert.Equal(t, 3, ex.InterpreterExit.ExitCode)
			assert.False(t, ex.Interrupted)
			ex = e.run(t, s, e.code.getX, coderuntime.Callbacks{})
			assert.Equal(t, 1, ex.ExecutionCount, "the next cell runs in a fresh interpreter")
			require.NotNil(t, ex.Error)
			assert.Equal(t, e.code.undefined, ex.Error.Name)
		}},
		{"TopLevelAwait", func(s sessionSnippets) string { return s.awaitSet }, func(t *testing.T, e *sessionEnv) {
			s := e.open(t, coderuntime.SessionConfig{})
			e.ok(t, s, e.code.awaitSet)
			assert.Equal(t, "6", mainText(t, e.ok(t, s, e.code.q2)), "what an awaiting cell declares outlives it")
		}},
		{"RejectedPromise", func(s sessionSnippets) string { return s.rejected }, func(t *testing.T, e *sessionEnv) {
			s := e.open(t, coderuntime.SessionConfig{})
			ex := e.run(t, s, e.code.rejected, coderuntime.Callbacks{})
			require.NotNil(t, ex.Error, "an unhandled rejection is the cell's error")
			assert.Equal(t, "Error", ex.Error.Name)
			assert.Equal(t, "no", ex.Error.Value)
			assert.Empty(t, ex.Results, "the rejected promise is not also shown")
			assert.False(t, ex.Restarted)
			e.ok(t, s, e.code.assign41)
		}},
		{"BackgroundErrorOfAnEarlierCell", func(s sessionSnippets) string { return s.lateF }, func(t *testing.T, e *sessionEnv) {
			s := e.open(t, coderuntime.SessionConfig{})
			gate := filepath.Join(t.TempDir(), "gate")
			e.ok(t, s, e.code.late(gate))
			var seen []coderuntime.BackgroundError
			ex := e.run(t, s, e.code.lateWait(gate), coderuntime.Callbacks{
				BackgroundError: func(be coderuntime.BackgroundError) { seen = append(seen, be) },
			})
			require.Nil(t, ex.Error, "an error of code an earlier cell left running is not the running cell's: %+v", ex.Error)
			assert.Equal(t, "7", mainText(t, ex), "the running cell keeps its result")
			assert.Empty(t, ex.Stderr.Tail, "the error is reported apart, not printed")
			require.Len(t, ex.BackgroundErrors, 1, "the background error is reported with the cell running")
			be := ex.BackgroundErrors[0]
			assert.Equal(t, 1, be.Cell, "it names the cell whose code raised it")
			assert.Equal(t, "late", be.Value)
			assert.Contains(t, be.Traceback, "<cell-1>")
			assert.Equal(t, ex.BackgroundErrors, seen, "the callback got it")
			ex = e.ok(t, s, e.code.statement)
			assert.Empty(t, ex.BackgroundErrors, "reported once")
		}},
		{"SecretsAbsent", func(s sessionSnippets) string { return s.env }, func(t *testing.T, e *sessionEnv) {
			s := e.open(t, coderuntime.SessionConfig{Env: []string{plainVar + "=given"}})
			ex := e.ok(t, s, e.code.env)
			require.False(t, ex.Stdout.Truncated)
			assert.NotContains(t, ex.Stdout.Tail, e.secret, "a host secret reached the code")
			assert.NotContains(t, ex.Stdout.Tail, "SUBKIT_SESSION_TOKEN", "the driver's token is not the code's")
			assert.Contains(t, ex.Stdout.Tail, plainVar+"=given\n", "SessionConfig.Env reaches the code")
		}},
		{"ConcurrentRunsTakeTurns", func(s sessionSnippets) string { return s.incr }, func(t *testing.T, e *sessionEnv) {
			s := e.open(t, coderuntime.SessionConfig{})
			const n = 6
			counts := make([]int, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), runBound)
					defer cancel()
					ex, err := s.Run(ctx, coderuntime.Cell{Code: e.code.incr, Timeout: cellBound}, coderuntime.Callbacks{})
					if assert.NoError(t, err) {
						counts[i] = ex.ExecutionCount
					}
				})
			}
			wg.Wait()
			slices.Sort(counts)
			assert.Equal(t, []int{1, 2, 3, 4, 5, 6}, counts, "cells run one at a time")
			assert.Equal(t, "7", mainText(t, e.ok(t, s, e.code.incr)))
		}},
		{"CloseDuringCell", func(s sessionSnippets) string { return s.readyF }, func(t *testing.T, e *sessionEnv) {
			s := e.open(t, coderuntime.SessionConfig{})
			ready := filepath.Join(t.TempDir(), "ready")
			done := make(chan runOutcome, 1)
			go func() {
				ex, err := s.Run(context.Background(), coderuntime.Cell{Code: e.code.ready(ready), Timeout: cellBound}, coderuntime.Callbacks{})
				done <- runOutcome{ex, err}
			}()
			waitFile(t, ready, done)
			require.NoError(t, s.Close())
			o := <-done // Close waits for the cell to return
			assert.ErrorIs(t, o.err, coderuntime.ErrClosed)
			e.noProcesses(t)
			_, err := s.Run(context.Background(), coderuntime.Cell{Code: e.code.getX}, coderuntime.Callbacks{})
			assert.ErrorIs(t, err, coderuntime.ErrClosed)
			assert.ErrorIs(t, s.Restart(context.Background()), coderuntime.ErrClosed)
		}},
		{"InvalidInput", nil, func(t *testing.T, e *sessionEnv) {
			s := e.open(t, coderuntime.SessionConfig{})
			for _, cell := range []coderuntime.Cell{
				{Code: "1", Timeout: -time.Second},
				{Code: strings.Repeat(" ", coderuntime.MaxCellBytes+1)},
			} {
				_, err := s.Run(context.Background(), cell, coderuntime.Callbacks{})
				assert.ErrorIs(t, err, coderuntime.ErrInvalid)
			}
			_, err := s.Run(nil, coderuntime.Cell{Code: "1"}, coderuntime.Callbacks{})
			assert.ErrorIs(t, err, coderuntime.ErrInvalid)
			assert.ErrorIs(t, s.Restart(nil), coderuntime.ErrInvalid)
			for _, cfg := range []coderuntime.SessionConfig{
				{Language: e.lang, Timeout: -1},
				{Language: e.lang, Grace: -1},
				{Language: e.lang, StdoutBytes: -1},
				{Language: e.lang, Env: []string{"NO_EQUALS_SIGN"}},
				{Language: ""},
			} {
				_, err := e.rt.NewSession(context.Background(), cfg)
				assert.ErrorIs(t, err, coderuntime.ErrInvalid, "%+v", cfg)
			}
			for _, l := range []coderuntime.Language{coderuntime.Bash, "cobol-85"} {
				_, err := e.rt.NewSession(context.Background(), coderuntime.SessionConfig{Language: l})
				assert.ErrorIs(t, err, coderuntime.ErrUnsupportedLanguage, "%s", l)
			}
			_, err = e.rt.NewSession(context.Background(), coderuntime.SessionConfig{Language: e.lang, Interpreter: "subkit-runtimetest-no-such-interpreter"})
			assert.ErrorIs(t, err, coderuntime.ErrRuntimeUnavailable)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			_, err = e.rt.NewSession(ctx, coderuntime.SessionConfig{Language: e.lang})
			assert.ErrorIs(t, err, context.Canceled)
			require.NoError(t, e.rt.Close())
			_, err = e.rt.NewSession(context.Background(), coderuntime.SessionConfig{Language: e.lang})
			assert.ErrorIs(t, err, coderuntime.ErrClosed, "NewSession after the runtime's Close")
			_, err = s.Run(context.Background(), coderuntime.Cell{Code: e.code.getX}, coderuntime.Callbacks{})
			assert.ErrorIs(t, err, coderuntime.ErrClosed, "the runtime's Close closes its sessions")
		}},
	}
}

// peakHeap samples the heap's live and unswept objects until stop is closed, and returns the
// largest figure seen.
func peakHeap(stop chan struct{}) uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	t := time.NewTicker(2 * time.Millisecond)
	defer t.Stop()
	for {
		metrics.Read(sample)
		peak = max(peak, sample[0].Value.Uint64())
		select {
		case <-stop:
			return peak
		case <-t.C:
		}
	}
}
