package runtimetest

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/subkit/subkit/coderuntime"
	"github.com/subkit/subkit/internal/backoff"
	"github.com/subkit/subkit/internal/testutil"
)

// SecretVar is set in the host environment (with a random value) before every newRuntime
// call; the code must never see it.
const SecretVar = "SUBKIT_TEST_SECRET_TOKEN"

// Slack is what the timing checks allow beyond the bounds a Request sets, for a loaded host.
const Slack = 3 * time.Second

// runBound bounds any single Run of the suite.
const runBound = 2 * time.Minute

// Runtime is what the contract suite runs: a code runtime, such as *coderuntime.Runtime.
// Implementations are safe for concurrent use.
type Runtime interface {
	// Run runs req.Code to its end, its timeout, or ctx's end, whichever comes first, and
	// ends every process the code started before it returns. A code error is a Result, never
	// a Go error; Go errors wrap the coderuntime sentinels (see coderuntime.Runtime.Run).
	Run(ctx context.Context, req coderuntime.Request) (coderuntime.Result, error)
	// Languages lists the languages Run can run now.
	Languages() []coderuntime.Language
	// Close ends every run still going and releases the runtime's resources. It is safe to
	// call more than once; Run after Close fails with coderuntime.ErrClosed.
	Close() error
}

// SessionRuntime is a Runtime that also opens sessions, what RunSessions runs.
type SessionRuntime interface {
	Runtime
	// NewSession starts a session's interpreter and returns once it is ready for a cell.
	NewSession(ctx context.Context, cfg coderuntime.SessionConfig) (coderuntime.Session, error)
	// SessionLanguages lists the languages NewSession can open now.
	SessionLanguages() []coderuntime.Language
}

var _ SessionRuntime = (*coderuntime.Runtime)(nil)

// Run runs the contract suite against the runtimes newRuntime returns.
func Run(t *testing.T, newRuntime func(t *testing.T) Runtime) {
	t.Helper()
	var langs []coderuntime.Language
	t.Run("Languages", func(t *testing.T) {
		e := setup(t, newRuntime, "")
		langs = e.rt.Languages()
		seen := map[coderuntime.Language]bool{}
		for _, l := range langs {
			assert.False(t, seen[l], "Languages lists %s twice", l)
			seen[l] = true
		}
		require.True(t, slices.ContainsFunc(langs, func(l coderuntime.Language) bool {
			_, ok := snippetsFor(l)
			return ok
		}), "Languages %v lists none of python3, node, bash: the suite has nothing to run", langs)
	})
	for _, lang := range []coderuntime.Language{coderuntime.Python3, coderuntime.Node, coderuntime.Bash} {
		t.Run(string(lang), func(t *testing.T) {
			if !slices.Contains(langs, lang) {
				t.Skipf("the runtime does not offer %s (Languages: %v)", lang, langs)
			}
			for _, c := range languageCases() {
				t.Run(c.name, func(t *testing.T) {
					e := setup(t, newRuntime, lang)
					if c.needs != nil && c.needs(e.code) == "" {
						t.Skipf("no %s snippet for %s", c.name, lang)
					}
					c.run(t, e)
				})
			}
		})
	}
	first := func(t *testing.T) coderuntime.Language {
		for _, l := range []coderuntime.Language{coderuntime.Python3, coderuntime.Bash, coderuntime.Node} {
			if slices.Contains(langs, l) {
				return l
			}
		}
		t.Skip("no language the suite knows")
		return ""
	}
	for _, c := range runtimeCases() {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, setup(t, newRuntime, first(t)))
		})
	}
}

// env is one subtest's runtime and what it needs to run snippets.
type env struct {
	rt     Runtime
	lang   coderuntime.Language
	code   snippets
	mark   string
	secret string
}

// setup makes a fresh runtime for one subtest and registers the leak checks. Cleanups run in
// reverse: Close (twice), then processes and descriptors, then goroutines.
func setup(t *testing.T, newRuntime func(t *testing.T) Runtime, lang coderuntime.Language) *env {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() { noGoroutineLeak(t, before) })
	e := &env{lang: lang, mark: testutil.Mark(), secret: "subkit-runtimetest-" + testutil.Mark()}
	e.code, _ = snippetsFor(lang)
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

func noGoroutineLeak(t *testing.T, before int) {
	if settles(5*time.Second, func() bool { return runtime.NumGoroutine() <= before }) {
		return
	}
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	t.Errorf("leak: %d goroutines after the subtest, %d before:\n%s", runtime.NumGoroutine(), before, buf)
}

// poll is the back-off of the suite's checks that have no event to wait on.
var poll = backoff.Policy{First: time.Millisecond, Max: 10 * time.Millisecond}

// settles reports whether ok holds within bound, probing it with the suite's back-off.
func settles(bound time.Duration, ok func() bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	return backoff.Until(ctx, poll, func() (bool, error) { return ok(), nil }) == nil
}

// req is a Request for code in the subtest's language, with a generous timeout.
func (e *env) req(code string) coderuntime.Request {
	return coderuntime.Request{Language: e.lang, Code: code, Timeout: time.Minute}
}

// run runs req marked with the subtest's mark, and returns how long Run took.
func (e *env) run(ctx context.Context, req coderuntime.Request) (coderuntime.Result, time.Duration, error) {
	req.Env = append(slices.Clip(req.Env), testutil.MarkVar+"="+e.mark)
	begin := time.Now()
	res, err := e.rt.Run(ctx, req)
	return res, time.Since(begin), err
}

// mustRun runs req, requires no error, and checks that the run left no process behind.
func (e *env) mustRun(t *testing.T, req coderuntime.Request) coderuntime.Result {
	t.Helper()
	res, _ := e.mustRunTimed(t, req)
	return res
}

// mustRunTimed is mustRun that also returns how long Run took.
func (e *env) mustRunTimed(t *testing.T, req coderuntime.Request) (coderuntime.Result, time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runBound)
	defer cancel()
	res, took, err := e.run(ctx, req)
	require.NoError(t, err)
	e.noProcesses(t)
	removeSpills(t, res)
	return res, took
}

// noProcesses fails when a process carrying the mark is alive (on Linux). A killed process
// may take a moment to leave the process table, so it polls briefly.
func (e *env) noProcesses(t *testing.T) {
	t.Helper()
	if !settles(time.Second, func() bool { return len(testutil.Marked(e.mark)) == 0 }) {
		t.Errorf("processes of the run still alive after Run returned: %v", testutil.Marked(e.mark))
	}
}

func removeSpills(t *testing.T, res coderuntime.Result) {
	for _, p := range []string{res.Stdout.SpillPath, res.Stderr.SpillPath} {
		if p != "" {
			t.Cleanup(func() { os.Remove(p) })
		}
	}
}

// gone checks that a directory the code reported (its first line of out) no longer exists.
func gone(t *testing.T, out string) {
	t.Helper()
	dir, _, _ := strings.Cut(out, "\n")
	if dir == "" {
		t.Log("the code printed no working directory before it ended; not checked")
		return
	}
	_, err := os.Stat(dir)
	assert.True(t, errors.Is(err, os.ErrNotExist), "the run's directory %s still exists after Run (stat: %v)", dir, err)
}

// startup measures how long an "ok" run takes, for bounds that include interpreter startup.
func (e *env) startup(t *testing.T) time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), runBound)
	defer cancel()
	res, took, err := e.run(ctx, e.req(e.code.ok))
	require.NoError(t, err)
	require.Equal(t, "ok\n", res.Stdout.Tail)
	return took
}

type testCase struct {
	name  string
	needs func(s snippets) string // the snippet the case needs; "" skips it
	run   func(t *testing.T, e *env)
}

func languageCases() []testCase {
	return []testCase{
		{"StdoutStderrApart", func(s snippets) string { return s.outErr }, func(t *testing.T, e *env) {
			res := e.mustRun(t, e.req(e.code.outErr))
			assert.Equal(t, "out\n", res.Stdout.Tail)
			assert.Equal(t, "err\n", res.Stderr.Tail)
			assert.EqualValues(t, 4, res.Stdout.TotalBytes)
			assert.EqualValues(t, 4, res.Stderr.TotalBytes)
			assert.False(t, res.Stdout.Truncated || res.Stderr.Truncated)
			assert.Equal(t, 0, res.ExitCode)
			assert.Empty(t, res.Signal)
			assert.False(t, res.TimedOut || res.Cancelled)
			assert.Nil(t, res.Error)
			assert.Equal(t, e.lang, res.Language)
			assert.Positive(t, res.Duration)
		}},
		{"ExitCodes", func(s snippets) string { return s.exit3 }, func(t *testing.T, e *env) {
			res := e.mustRun(t, e.req(e.code.exit3))
			assert.Equal(t, 3, res.ExitCode)
			assert.Empty(t, res.Signal)
			assert.Nil(t, res.Error, "an exit status is not a code error")
			if runtime.GOOS == "windows" || e.code.killSelf == "" {
				return
			}
			res = e.mustRun(t, e.req(e.code.killSelf))
			assert.Equal(t, -1, res.ExitCode)
			assert.Equal(t, "SIGKILL", res.Signal)
			assert.Nil(t, res.Error)
		}},
		{"UncaughtException", func(s snippets) string { return s.raise }, func(t *testing.T, e *env) {
			res := e.mustRun(t, e.req(e.code.raise))
			assert.NotEqual(t, 0, res.ExitCode)
			assert.Equal(t, "before\n", res.Stdout.Tail, "stdout holds only what the code printed")
			require.NotNil(t, res.Error, "an uncaught exception is a structured error; stderr: %s", res.Stderr.Tail)
			assert.Equal(t, e.code.raiseName, res.Error.Name)
			assert.Equal(t, "bad value", res.Error.Value)
			assert.Contains(t, res.Error.Traceback, "bad value")
			assert.Contains(t, res.Error.Traceback, e.code.raiseIn, "the traceback names the raising frame")
			gone(t, res.Stderr.Tail)
		}},
		{"HandledException", func(s snippets) string { return s.handled }, func(t *testing.T, e *env) {
			res := e.mustRun(t, e.req(e.code.handled))
			assert.Equal(t, "caught\n", res.Stdout.Tail)
			assert.Equal(t, 0, res.ExitCode)
			assert.Nil(t, res.Error)
		}},
		{"SyntaxError", func(s snippets) string { return s.syntax }, func(t *testing.T, e *env) {
			res := e.mustRun(t, e.req(e.code.syntax))
			assert.NotEqual(t, 0, res.ExitCode)
			assert.Empty(t, res.Stdout.Tail, "no line runs when the code does not compile")
			require.NotNil(t, res.Error, "a syntax error is a structured error; stderr: %s", res.Stderr.Tail)
			assert.Equal(t, "SyntaxError", res.Error.Name)
			assert.NotEmpty(t, res.Error.Value)
		}},
		{"TimeoutBusyLoop", func(s snippets) string { return s.busy }, func(t *testing.T, e *env) {
			e.timeout(t, e.code.busy, "")
		}},
		{"TimeoutSleep", func(s snippets) string { return s.sleep }, func(t *testing.T, e *env) {
			e.timeout(t, e.code.sleep, "")
		}},
		{"TimeoutIgnoringSIGTERM", func(s snippets) string { return posixOnly(s.ignore) }, func(t *testing.T, e *env) {
			e.timeout(t, e.code.ignore, "SIGKILL")
		}},
		{"EscapedGrandchildHoldsPipes", func(s snippets) string { return posixOnly(s.escape) }, func(t *testing.T, e *env) {
			if e.code.escapeBin != "" {
				if _, err := exec.LookPath(e.code.escapeBin); err != nil {
					t.Skipf("%s not found: %v", e.code.escapeBin, err)
				}
			}
			base := e.startup(t)
			req := e.req(e.code.escape)
			req.Grace = 300 * time.Millisecond
			res, took := e.mustRunTimed(t, req)
			// mustRunTimed has checked that the escaped grandchild is gone.
			assert.Equal(t, "started\n", res.Stdout.Tail)
			assert.Equal(t, 0, res.ExitCode)
			assert.False(t, res.TimedOut)
			assert.Less(t, took, base+2*req.Grace+Slack, "a grandchild holding the pipes held the run")
		}},
		{"CancelThenNextRun", func(s snippets) string { return s.ready }, func(t *testing.T, e *env) {
			ready := filepath.Join(t.TempDir(), "ready")
			req := e.req(e.code.ready)
			req.Grace = 300 * time.Millisecond
			req.Env = []string{readyVar + "=" + ready}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			type outcome struct {
				res coderuntime.Result
				err error
			}
			done := make(chan outcome, 1)
			go func() {
				res, _, err := e.run(ctx, req)
				done <- outcome{res, err}
			}()
			waitFile(t, ready, done)
			cancel()
			cancelled := time.Now()
			var o outcome
			select {
			case o = <-done:
			case <-time.After(req.Grace + Slack + 10*time.Second):
				t.Fatal("Run did not return after its ctx was cancelled")
			}
			took := time.Since(cancelled)
			require.NoError(t, o.err, "cancellation is a result, not an error")
			assert.True(t, o.res.Cancelled)
			assert.False(t, o.res.TimedOut)
			assert.Less(t, took, req.Grace+Slack, "Run returns within the grace of ctx's end")
			e.noProcesses(t)
			gone(t, o.res.Stdout.Tail)

			res := e.mustRun(t, e.req(e.code.ok))
			assert.Equal(t, "ok\n", res.Stdout.Tail, "the run after a cancelled one works")
			assert.False(t, res.Cancelled)

			ctx, cancel2 := context.WithCancel(context.Background())
			cancel2()
			_, _, err := e.run(ctx, e.req(e.code.ok))
			assert.ErrorIs(t, err, context.Canceled, "a ctx ended before the run is an error")
		}},
		{"LargeOutputBoundedMemory", func(s snippets) string { return s.big }, func(t *testing.T, e *env) {
			const size = 50 << 20
			req := e.req(e.code.big)
			req.StdoutBytes = 4096
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			res := e.mustRun(t, req)
			runtime.ReadMemStats(&after)
			assert.EqualValues(t, size+4, res.Stdout.TotalBytes)
			assert.True(t, res.Stdout.Truncated)
			assert.LessOrEqual(t, len(res.Stdout.Tail), 4096)
			assert.True(t, strings.HasSuffix(res.Stdout.Tail, "xxxxEND\n"), "the tail is the end of the stream")
			assert.Equal(t, 0, res.ExitCode)
			alloc := after.TotalAlloc - before.TotalAlloc
			assert.Less(t, alloc, uint64(16<<20), "allocated %d bytes for %d bytes of output", alloc, size)
			t.Logf("allocated %d KiB for 50 MiB of output", alloc>>10)
		}},
		{"HeavyStderrQuietStdout", func(s snippets) string { return s.heavyErr }, func(t *testing.T, e *env) {
			res := e.mustRun(t, e.req(e.code.heavyErr))
			assert.Equal(t, "done\n", res.Stdout.Tail)
			assert.EqualValues(t, 8<<20, res.Stderr.TotalBytes)
			assert.True(t, res.Stderr.Truncated)
			assert.False(t, res.TimedOut)
			assert.Equal(t, 0, res.ExitCode)
		}},
		{"UTF8", func(s snippets) string { return s.utf8 }, func(t *testing.T, e *env) {
			res := e.mustRun(t, e.req(e.code.utf8))
			assert.Equal(t, utf8Text+"\n", res.Stdout.Tail, "UTF-8 round trip")
			if e.code.utf8Rep == "" {
				return
			}
			full := strings.Repeat(utf8Unit, utf8Repeat)
			for budget := 5; budget <= 12; budget++ {
				req := e.req(e.code.utf8Rep)
				req.StdoutBytes = budget
				res := e.mustRun(t, req)
				tail := res.Stdout.Tail
				assert.True(t, res.Stdout.Truncated, "budget %d", budget)
				assert.EqualValues(t, len(full), res.Stdout.TotalBytes, "budget %d", budget)
				assert.True(t, utf8.ValidString(tail), "budget %d: tail %q splits a character", budget, tail)
				assert.True(t, strings.HasSuffix(full, tail), "budget %d: tail %q is not the end of the stream", budget, tail)
				assert.LessOrEqual(t, len(tail), budget, "budget %d", budget)
				assert.Greater(t, len(tail), budget-utf8.UTFMax, "budget %d: only a cut character may be dropped", budget)
			}
		}},
		{"StdinEOF", func(s snippets) string { return s.stdin }, func(t *testing.T, e *env) {
			req := e.req(e.code.stdin)
			req.Timeout = 20 * time.Second
			res := e.mustRun(t, req)
			assert.Equal(t, "eof\n", res.Stdout.Tail, "without Stdin, a read gets end-of-file")
			assert.False(t, res.TimedOut, "the code waited on stdin")
			req.Stdin = []byte("hello\nworld\n")
			res = e.mustRun(t, req)
			assert.Equal(t, "got hello\n", res.Stdout.Tail)
		}},
		{"SecretsAbsent", func(s snippets) string { return s.env }, func(t *testing.T, e *env) {
			req := e.req(e.code.env)
			req.Env = []string{plainVar + "=given"}
			res := e.mustRun(t, req)
			require.False(t, res.Stdout.Truncated, "the environment fits the default budget")
			assert.NotContains(t, res.Stdout.Tail, e.secret, "a host secret reached the code")
			assert.NotContains(t, res.Stdout.Tail, SecretVar+"=", "a host secret reached the code")
			assert.Contains(t, res.Stdout.Tail, plainVar+"=given\n", "Request.Env reaches the code")
		}},
		{"PrivateDir", func(s snippets) string { return s.where }, func(t *testing.T, e *env) {
			res := e.mustRun(t, e.req(e.code.where))
			lines := strings.Split(strings.TrimSuffix(res.Stdout.Tail, "\n"), "\n")
			require.Len(t, lines, 4, "output: %q, stderr: %q", res.Stdout.Tail, res.Stderr.Tail)
			dir, file := lines[0], lines[1]
			if !filepath.IsAbs(file) {
				file = filepath.Join(dir, file)
			}
			host, _ := os.Getwd()
			assert.NotEqual(t, host, dir, "the code runs in its own directory")
			for _, p := range []string{dir, file} {
				_, err := os.Stat(p)
				assert.True(t, errors.Is(err, os.ErrNotExist), "%s still exists after Run", p)
			}
			if runtime.GOOS != "windows" {
				assert.Equal(t, "0o700", lines[2], "mode of the working directory")
				assert.Equal(t, "0o600", lines[3], "mode of the code file")
			}
		}},
	}
}

// posixOnly returns s, or "" on Windows.
func posixOnly(s string) string {
	if runtime.GOOS == "windows" {
		return ""
	}
	return s
}

// timeout runs code that never ends with a 1 s timeout and a 300 ms grace. signal, when set,
// is the signal that must have ended it.
func (e *env) timeout(t *testing.T, code, signal string) {
	t.Helper()
	req := e.req(code)
	req.Timeout = time.Second
	req.Grace = 300 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), runBound)
	defer cancel()
	res, took, err := e.run(ctx, req)
	require.NoError(t, err)
	e.noProcesses(t)
	assert.True(t, res.TimedOut)
	assert.False(t, res.Cancelled)
	assert.Nil(t, res.Error, "a timeout is not a code error")
	assert.Less(t, took, req.Timeout+req.Grace+Slack, "ends within timeout + grace")
	assert.GreaterOrEqual(t, took, req.Timeout)
	if runtime.GOOS != "windows" {
		assert.Equal(t, -1, res.ExitCode)
		assert.NotEmpty(t, res.Signal)
	}
	if signal != "" {
		if strings.HasPrefix(res.Stdout.Tail, "ignoring") {
			assert.Equal(t, signal, res.Signal, "SIGTERM was ignored, so SIGKILL ended it after the grace")
			assert.GreaterOrEqual(t, took, req.Timeout+req.Grace)
		} else {
			t.Log("the code did not start ignoring SIGTERM before its timeout; signal not checked")
		}
		return
	}
	gone(t, res.Stdout.Tail)
}

// waitFile waits until path exists, failing early when the run ends first.
func waitFile[T any](t *testing.T, path string, done chan T) {
	t.Helper()
	deadline := time.Now().Add(runBound)
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case o := <-done:
			t.Fatalf("the run ended before it was ready: %+v", o)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the run never became ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func runtimeCases() []testCase {
	return []testCase{
		{name: "EightConcurrentRunsIsolated", run: func(t *testing.T, e *env) {
			const n = 8
			results := make([]coderuntime.Result, n)
			errs := make([]error, n)
			ctx, cancel := context.WithTimeout(context.Background(), runBound)
			defer cancel()
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					req := e.req(e.code.isolated)
					req.Env = []string{idVar + "=run" + string(rune('A'+i))}
					results[i], _, errs[i] = e.run(ctx, req)
				})
			}
			wg.Wait()
			e.noProcesses(t)
			dirs := map[string]bool{}
			for i, res := range results {
				id := "run" + string(rune('A'+i))
				require.NoError(t, errs[i], id)
				lines := strings.Split(strings.TrimSuffix(res.Stdout.Tail, "\n"), "\n")
				require.Len(t, lines, 4, "%s: stdout %q, stderr %q", id, res.Stdout.Tail, res.Stderr.Tail)
				assert.Equal(t, []string{id, id, "own.txt"}, lines[1:], "%s sees only its own env, files and output", id)
				assert.False(t, dirs[lines[0]], "%s shares its directory %s", id, lines[0])
				dirs[lines[0]] = true
				gone(t, res.Stdout.Tail)
			}
		}},
		{name: "MissingInterpreter", run: func(t *testing.T, e *env) {
			for _, name := range []string{
				"subkit-runtimetest-no-such-interpreter",
				filepath.Join(t.TempDir(), "no-such-dir", "python3"),
			} {
				req := e.req(e.code.ok)
				req.Interpreter = name
				ctx, cancel := context.WithTimeout(context.Background(), runBound)
				_, _, err := e.run(ctx, req)
				cancel()
				require.Error(t, err)
				assert.ErrorIs(t, err, coderuntime.ErrRuntimeUnavailable)
				assert.Contains(t, err.Error(), name, "the error names what was searched")
			}
		}},
		{name: "UnsupportedLanguage", run: func(t *testing.T, e *env) {
			req := e.req("")
			req.Language = "cobol-85"
			_, _, err := e.run(context.Background(), req)
			assert.ErrorIs(t, err, coderuntime.ErrUnsupportedLanguage)
		}},
		{name: "InvalidRequest", run: func(t *testing.T, e *env) {
			for _, mutate := range []func(*coderuntime.Request){
				func(r *coderuntime.Request) { r.Timeout = -time.Second },
				func(r *coderuntime.Request) { r.Grace = -time.Second },
				func(r *coderuntime.Request) { r.StdoutBytes = -1 },
				func(r *coderuntime.Request) { r.Env = []string{"NO_EQUALS_SIGN"} },
				func(r *coderuntime.Request) { r.Language = "" },
			} {
				req := e.req(e.code.ok)
				mutate(&req)
				_, _, err := e.run(context.Background(), req)
				assert.ErrorIs(t, err, coderuntime.ErrInvalid, "%+v", req)
			}
		}},
		{name: "CloseTwiceThenRun", run: func(t *testing.T, e *env) {
			assert.Equal(t, "ok\n", e.mustRun(t, e.req(e.code.ok)).Stdout.Tail)
			require.NoError(t, e.rt.Close())
			assert.NotPanics(t, func() { e.rt.Close() })
			_, _, err := e.run(context.Background(), e.req(e.code.ok))
			assert.ErrorIs(t, err, coderuntime.ErrClosed)
		}},
	}
}
