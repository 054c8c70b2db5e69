//go:build unix

package bash_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/bash"
	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/procinspect"
)

func TestExecResult(t *testing.T) {
	e, _ := newExecutor(t, bash.Config{})
	res := exec(t, e, bash.Request{Command: "echo out; echo err >&2; exit 3"})
	assert.Equal(t, 3, res.ExitCode)
	assert.Empty(t, res.Signal)
	assert.Equal(t, "out\n", string(res.Stdout.Tail))
	assert.Equal(t, "err\n", string(res.Stderr.Tail))
	assert.EqualValues(t, 4, res.Stdout.TotalBytes)
	assert.Equal(t, []string{"bash", "-c", "echo out; echo err >&2; exit 3"}, res.Argv)
	assert.Equal(t, 120*time.Second, res.Timeout)
	assert.False(t, res.TimedOut || res.Cancelled || res.Lingering || res.PipesHeld)
	assert.NotZero(t, res.Pid)
	assert.Positive(t, res.Duration)
	assert.False(t, res.Success())
	assert.Equal(t, "out\n[stderr]\nerr\n[exit code 3]\n", bash.Render(res, nil))

	res = exec(t, e, bash.Request{Command: "kill -SEGV $$"})
	assert.Equal(t, -1, res.ExitCode)
	assert.Equal(t, "SIGSEGV", res.Signal)
	assert.Equal(t, "(no output)\n[killed by signal SIGSEGV]\n", bash.Render(res, nil))
}

// Every call is a fresh non-login, non-interactive bash that reads no startup file and keeps
// no state.
func TestExecFreshShell(t *testing.T) {
	dir := t.TempDir()
	rc := filepath.Join(dir, "rc")
	require.NoError(t, os.WriteFile(rc, []byte("echo SOURCED\n"), 0o600))
	e, _ := newExecutor(t, bash.Config{Cwd: dir, Env: append(os.Environ(), "BASH_ENV="+rc, "ENV="+rc, "SHELLOPTS=xtrace")})
	res := exec(t, e, bash.Request{Command: `shopt -q login_shell && echo login || echo non-login; echo "flags=$-"; pwd; X=1`})
	out := string(res.Stdout.Tail)
	assert.NotContains(t, out, "SOURCED")
	assert.Contains(t, out, "non-login")
	flags := strings.SplitN(strings.SplitN(out, "flags=", 2)[1], "\n", 2)[0]
	assert.NotContains(t, flags, "i", "not interactive")
	assert.NotContains(t, flags, "x", "host SHELLOPTS dropped")
	assert.Contains(t, out, dir+"\n", "runs in Config.Cwd")
	assert.Empty(t, res.Stderr.Tail)
	res = exec(t, e, bash.Request{Command: `echo "[$X]"`})
	assert.Equal(t, "[]\n", string(res.Stdout.Tail), "no state between calls")
}

func TestExecTimeoutEndsWholeGroup(t *testing.T) {
	e, mark := newExecutor(t, bash.Config{Grace: 300 * time.Millisecond})
	// The shell and its children ignore SIGTERM: only SIGKILL after the grace ends them. The
	// timeout leaves bash time to set its trap on a loaded machine.
	res := exec(t, e, bash.Request{
		Command: `trap '' TERM; sleep 1000 & echo $!; sleep 1000`,
		Timeout: 3 * time.Second,
	})
	assert.True(t, res.TimedOut)
	assert.False(t, res.Cancelled)
	assert.Equal(t, "SIGKILL", res.Signal)
	assert.Equal(t, 3*time.Second, res.Timeout)
	assert.GreaterOrEqual(t, res.Duration, 3300*time.Millisecond, "timeout + grace")
	assert.False(t, res.Lingering)
	pid, err := strconv.Atoi(strings.TrimSpace(string(res.Stdout.Tail)))
	require.NoError(t, err)
	assert.Empty(t, testutil.Marked(mark), "Exec returned once the group was gone: the TERM-ignoring child too")
	if p, err := procinspect.Lookup(context.Background(), pid); err == nil {
		alive, err := procinspect.Alive(context.Background(), p.Identity)
		require.NoError(t, err)
		assert.False(t, alive, "pid %d (%s) survived", pid, p.Comm)
	}
	assert.Contains(t, bash.Render(res, nil), "[timed out after 3s: the command and every process it started were terminated (the shell ended by SIGKILL)]")
}

func TestExecTimeoutCappedAtMax(t *testing.T) {
	e, _ := newExecutor(t, bash.Config{Timeout: 100 * time.Millisecond, MaxTimeout: 400 * time.Millisecond, Grace: 200 * time.Millisecond})
	res := exec(t, e, bash.Request{Command: "sleep 10", Timeout: time.Hour})
	assert.True(t, res.TimedOut)
	assert.Equal(t, 400*time.Millisecond, res.Timeout)
	assert.GreaterOrEqual(t, res.Duration, 400*time.Millisecond)
	assert.Equal(t, "SIGTERM", res.Signal)
	res = exec(t, e, bash.Request{Command: "sleep 10"})
	assert.Equal(t, 100*time.Millisecond, res.Timeout, "the config's default")
	assert.True(t, res.TimedOut)
}

// A Python writing to the output pipe keeps no block buffer (PYTHONUNBUFFERED=1 in the model
// environment): what it printed before a timeout ended it is in the result.
func TestExecTimeoutKeepsPythonOutput(t *testing.T) {
	e, _ := newExecutor(t, bash.Config{Grace: 200 * time.Millisecond})
	if res := exec(t, e, bash.Request{Command: "command -v python3"}); res.ExitCode != 0 {
		t.Skip("python3 is not installed")
	}
	// The command is ended (SIGTERM to its tree, as a timeout does) once python has printed
	// and said so on a FIFO, however long python took to start.
	run := func(env map[string]string) bash.Result {
		t.Helper()
		ctx, ready := testutil.CancelOnSignal(t)
		res, err := e.Exec(ctx, bash.Request{
			Command: `python3 -c 'print("epoch 1 done"); open("` + ready + `", "w").write("x\n"); import time; time.sleep(100)'`,
			Env:     env,
		})
		require.NoError(t, err)
		require.True(t, res.Cancelled)
		require.Equal(t, "SIGTERM", res.Signal)
		return res
	}
	assert.Equal(t, "epoch 1 done\n", string(run(nil).Stdout.Tail))

	// The trap it avoids: with the variable empty, the buffered line dies with Python.
	assert.Empty(t, run(map[string]string{"PYTHONUNBUFFERED": ""}).Stdout.Tail)
}

func TestExecContextCancel(t *testing.T) {
	e, _ := newExecutor(t, bash.Config{Grace: 300 * time.Millisecond})
	ctx, ready := testutil.CancelOnSignal(t)
	res, err := e.Exec(ctx, bash.Request{Command: "echo started; echo > " + ready + "; sleep 1000 & sleep 1000"})
	require.NoError(t, err)
	assert.True(t, res.Cancelled)
	assert.False(t, res.TimedOut)
	assert.Equal(t, "SIGTERM", res.Signal)
	assert.False(t, res.Lingering, "the whole group was terminated")
	assert.Equal(t, "started\n", string(res.Stdout.Tail))
	assert.Equal(t, "started\n[cancelled: the command and every process it started were terminated (the shell ended by SIGTERM)]\n", bash.Render(res, nil))

	// A context already done refuses to start.
	_, err = e.Exec(ctx, bash.Request{Command: "true"})
	assert.ErrorIs(t, err, context.Canceled)
}

// `sleep 1000 & echo done` returns once the drain grace has run out, whatever the kill grace
// (an hour here: waiting for it would outlast the test); the daemon is reported, owned, and
// ended by Close.
func TestExecSurvivorReportedAndOwned(t *testing.T) {
	e, _ := newExecutor(t, bash.Config{Grace: time.Hour})
	res := exec(t, e, bash.Request{Command: "sleep 1000 & echo done"})
	assert.Equal(t, 0, res.ExitCode)
	assert.Equal(t, "done\n", string(res.Stdout.Tail))
	assert.True(t, res.PipesHeld)
	require.True(t, res.Lingering)
	require.Len(t, res.Survivors, 1)
	s := res.Survivors[0]
	assert.Equal(t, "sleep", s.Comm)
	assert.Equal(t, res.Pid, s.Pgid)
	text := bash.Render(res, nil)
	assert.Contains(t, text, "[1 process the command started is still running in the background: pid "+strconv.Itoa(s.Pid)+" (sleep).")
	assert.Contains(t, text, "`kill "+strconv.Itoa(s.Pid)+"`")
	assert.Contains(t, text, "kept the output open")

	// Owned: still alive after Exec returned, until Close.
	alive, err := procinspect.Alive(context.Background(), s.Identity)
	require.NoError(t, err)
	assert.True(t, alive)
	assert.Equal(t, 1, e.Stats().Lingering)

	// One that does not hold the pipes returns at once: without waiting for a drain grace of
	// an hour.
	e2, _ := newExecutor(t, bash.Config{Grace: time.Hour, DrainGrace: time.Hour})
	res = exec(t, e2, bash.Request{Command: "sleep 1000 >/dev/null 2>&1 & echo $!"})
	assert.False(t, res.PipesHeld)
	require.True(t, res.Lingering)
	require.Len(t, res.Survivors, 1)
	assert.Equal(t, strings.TrimSpace(string(res.Stdout.Tail)), strconv.Itoa(res.Survivors[0].Pid))
	assert.Equal(t, 1, e2.Stats().Lingering)

	require.NoError(t, e.Close())
	alive, err = procinspect.Alive(context.Background(), s.Identity)
	require.NoError(t, err)
	assert.False(t, alive, "Close ended the survivor")
	assert.Equal(t, 0, e.Stats().Lingering)
}

// A survivor that exits by itself is no longer owned.
func TestExecSurvivorExitsByItself(t *testing.T) {
	e, _ := newExecutor(t, bash.Config{})
	res := exec(t, e, bash.Request{Command: "sleep 0.3 >/dev/null 2>&1 & echo ok"})
	require.True(t, res.Lingering)
	assert.Equal(t, 1, e.Stats().Lingering)
	eventually(t, 5*time.Second, func() bool { return e.Stats().Lingering == 0 }, "the executor lets go of the exited survivor")
}

// 100 MB of output: memory stays bounded, the tail is the stream's end, and the spill file
// holds every byte (checked by hash).
func TestExecLargeOutputSpill(t *testing.T) {
	if testing.Short() {
		t.Skip("100 MB of output")
	}
	e, _ := newExecutor(t, bash.Config{MaxSpillBytes: 128 << 20})
	const n = 12_400_000
	want := sha256.New()
	var tail []byte
	buf := make([]byte, 0, 1<<16)
	var size int64
	for i := 1; i <= n; i++ {
		buf = strconv.AppendInt(buf, int64(i), 10)
		buf = append(buf, '\n')
		if len(buf) > 1<<16-32 || i == n {
			want.Write(buf)
			size += int64(len(buf))
			if i == n {
				tail = append([]byte(nil), buf...)
			}
			buf = buf[:0]
		}
	}
	require.Greater(t, size, int64(100_000_000))

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res := exec(t, e, bash.Request{Command: "seq 1 " + strconv.Itoa(n)})
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	assert.Less(t, alloc, uint64(16<<20), "allocated %d bytes for %d bytes of output", alloc, size)

	assert.Equal(t, 0, res.ExitCode)
	assert.EqualValues(t, size, res.Stdout.TotalBytes)
	assert.True(t, res.Stdout.Truncated)
	assert.Len(t, res.Stdout.Tail, bash.DefaultMaxOutputBytes)
	assert.Equal(t, tail[len(tail)-1000:], res.Stdout.Tail[len(res.Stdout.Tail)-1000:])
	require.NotEmpty(t, res.Stdout.SpillPath)
	f, err := os.Open(res.Stdout.SpillPath)
	require.NoError(t, err)
	defer f.Close()
	got := sha256.New()
	copied, err := io.Copy(got, f)
	require.NoError(t, err)
	assert.Equal(t, size, copied)
	assert.Equal(t, want.Sum(nil), got.Sum(nil), "the spill file differs from the stream")
	assert.Contains(t, bash.Render(res, nil), "the whole stdout is in the file "+res.Stdout.SpillPath)
}

func TestExecStdoutMaxBytes(t *testing.T) {
	e, _ := newExecutor(t, bash.Config{MaxOutputBytes: 1000, MaxSpillBytes: 1 << 20})
	cmd := `head -c 20000 /dev/zero | tr '\0' o; head -c 20000 /dev/zero | tr '\0' e >&2`
	res := exec(t, e, bash.Request{Command: cmd, StdoutMaxBytes: 50000})
	assert.False(t, res.Stdout.Truncated)
	assert.Len(t, res.Stdout.Tail, 20000)
	assert.Empty(t, res.Stdout.SpillPath)
	assert.True(t, res.Stderr.Truncated, "stderr keeps maxOutputBytes")
	assert.Len(t, res.Stderr.Tail, 1000)
	assert.NotEmpty(t, res.Stderr.SpillPath)

	res = exec(t, e, bash.Request{Command: cmd, StdoutMaxBytes: 10})
	assert.Len(t, res.Stdout.Tail, 1000, "a smaller value does not lower the budget")

	_, err := e.Exec(context.Background(), bash.Request{Command: "true", StdoutMaxBytes: 2 << 20})
	requestErr(t, err, "StdoutMaxBytes", "")
	_, err = e.Start(context.Background(), bash.Request{Command: "true", StdoutMaxBytes: 5000})
	requestErr(t, err, "StdoutMaxBytes", "")
}

// requestErr asserts err is a *RequestError wrapping ErrInvalid for field and key.
func requestErr(t *testing.T, err error, field, key string) {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, bash.ErrInvalid)
	var re *bash.RequestError
	require.True(t, errors.As(err, &re), "%T: %v", err, err)
	assert.Equal(t, field, re.Field, "%v", err)
	assert.Equal(t, key, re.Key, "%v", err)
	assert.True(t, strings.HasPrefix(bash.Render(bash.Result{}, err), "[request refused, the command did not run: "), bash.Render(bash.Result{}, err))
}

func envOf(t *testing.T, res bash.Result) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(res.Stdout.Tail)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	return got
}

func TestExecEnv(t *testing.T) {
	host := append(os.Environ(),
		"SERVICE_API_KEY=hunter2", "DB_PASSWORD=pw", "DSH_OUTER=stale", "PAGER=less", "GIT_PAGER=less",
		"KEYBOARD_LAYOUT=us", "PLAIN_HOST=kept", "DSH_KEPT=host")
	e, _ := newExecutor(t, bash.Config{Env: host, AllowEnv: []string{"KEYBOARD_LAYOUT", "DSH_KEPT"}})
	res := exec(t, e, bash.Request{
		Command:    "env",
		Env:        map[string]string{"FOO": "bar", "TERM": "xterm"},
		ManagedEnv: map[string]string{"DSH_SESSION": "s1", "DSH_KEPT": "managed"},
	})
	got := envOf(t, res)
	for _, gone := range []string{"SERVICE_API_KEY", "DB_PASSWORD", "DSH_OUTER"} {
		assert.NotContains(t, got, gone)
	}
	assert.NotContains(t, res.Stdout.Tail, []byte("hunter2"))
	for k, v := range map[string]string{
		"NO_COLOR": "1", "PAGER": "cat", "GIT_PAGER": "cat", "GH_PAGER": "cat",
		"GIT_TERMINAL_PROMPT": "0", "GIT_EDITOR": "true", "PYTHONUNBUFFERED": "1",
		"TERM": "xterm", "FOO": "bar", "DSH_SESSION": "s1", "KEYBOARD_LAYOUT": "us", "PLAIN_HOST": "kept",
		"DSH_KEPT": "managed", // an allow-listed host name is overridden: managed env is merged last
	} {
		assert.Equal(t, v, got[k], k)
	}
	res = exec(t, e, bash.Request{Command: "env"})
	assert.Equal(t, "dumb", envOf(t, res)["TERM"])
	assert.Equal(t, "host", envOf(t, res)["DSH_KEPT"])

	for _, c := range []struct {
		req        bash.Request
		field, key string
	}{
		{bash.Request{Command: "env", Env: map[string]string{"DSH_X": "1"}}, "Env", "DSH_X"},
		{bash.Request{Command: "env", ManagedEnv: map[string]string{"PLAIN": "1"}}, "ManagedEnv", "PLAIN"},
		{bash.Request{Command: "env", Env: map[string]string{"": "1"}}, "Env", ""},
		{bash.Request{Command: "env", Env: map[string]string{"A=B": "1"}}, "Env", "A=B"},
		{bash.Request{Command: "env", Env: map[string]string{"A": "x\x00y"}}, "Env", "A"},
	} {
		_, err := e.Exec(context.Background(), c.req)
		requestErr(t, err, c.field, c.key)
		_, err = e.Start(context.Background(), c.req)
		requestErr(t, err, c.field, c.key)
	}
	_, err := e.Exec(context.Background(), bash.Request{Command: "env", Env: map[string]string{"DSH_X": "1"}})
	assert.Contains(t, err.Error(), `Env["DSH_X"]`)
	assert.Contains(t, err.Error(), "ManagedEnv")

	// Another managed prefix moves the rules with it.
	e2, _ := newExecutor(t, bash.Config{ManagedPrefix: "HX_"})
	res = exec(t, e2, bash.Request{Command: "env", Env: map[string]string{"DSH_X": "1"}, ManagedEnv: map[string]string{"HX_ID": "2"}})
	got = envOf(t, res)
	assert.Equal(t, "1", got["DSH_X"])
	assert.Equal(t, "2", got["HX_ID"])
	_, err = e2.Exec(context.Background(), bash.Request{Command: "env", Env: map[string]string{"HX_ID": "2"}})
	requestErr(t, err, "Env", "HX_ID")
}

func TestExecStdin(t *testing.T) {
	e, _ := newExecutor(t, bash.Config{})
	res := exec(t, e, bash.Request{Command: "cat; echo; cat", Stdin: []byte("given")})
	assert.Equal(t, "given\n", string(res.Stdout.Tail), "written, then closed")
	res = exec(t, e, bash.Request{Command: "cat", Stdin: []byte{}})
	assert.Empty(t, res.Stdout.Tail)
	res = exec(t, e, bash.Request{Command: "read -r x; echo \"rc=$? x=[$x]\""})
	assert.Equal(t, "rc=1 x=[]\n", string(res.Stdout.Tail), "no stdin: end of file at once")
	if runtime.GOOS == "linux" {
		res = exec(t, e, bash.Request{Command: "readlink /proc/self/fd/0"})
		assert.Equal(t, "/dev/null\n", string(res.Stdout.Tail))
	}
}

// Commands that would wait on an editor, a pager or a password prompt return.
func TestExecNoEditorPagerOrPrompt(t *testing.T) {
	dir := t.TempDir()
	e, _ := newExecutor(t, bash.Config{Cwd: dir, Timeout: 20 * time.Second})
	git := "git -c user.name=t -c user.email=t@example.com -c init.defaultBranch=main "
	res := exec(t, e, bash.Request{Command: "git init -q && " + git + "commit -q --allow-empty -m first"})
	require.Equal(t, 0, res.ExitCode, "%s", res.Stderr.Tail)
	for _, cmd := range []string{
		git + "commit --allow-empty",                   // no -m: GIT_EDITOR=true leaves the message empty
		"git log",                                      // the pager is cat
		"seq 1 5000 > f && less f",                     // less on a pipe is cat
		"git clone -q https://127.0.0.1:9/x.git clone", // no password prompt
		"git tag -a v1",                                // the annotation editor
	} {
		res := exec(t, e, bash.Request{Command: cmd})
		assert.False(t, res.TimedOut, cmd)
	}
	res = exec(t, e, bash.Request{Command: "git log --oneline"})
	assert.Contains(t, string(res.Stdout.Tail), "first")
	assert.NotContains(t, string(res.Stdout.Tail), "\x1b[", "no colour")
	res = exec(t, e, bash.Request{Command: "less f | tail -1"})
	assert.Equal(t, "5000\n", string(res.Stdout.Tail))
	res = exec(t, e, bash.Request{Command: git + "commit --allow-empty"})
	assert.NotEqual(t, 0, res.ExitCode)
	assert.Contains(t, string(res.Stderr.Tail)+string(res.Stdout.Tail), "empty commit message")
}

func TestExecRequestErrors(t *testing.T) {
	e, _ := newExecutor(t, bash.Config{})
	for _, c := range []struct {
		req   bash.Request
		field string
	}{
		{bash.Request{}, "Command"},
		{bash.Request{Command: "  \n"}, "Command"},
		{bash.Request{Command: "echo \x00"}, "Command"},
		{bash.Request{Command: "true", Timeout: -1}, "Timeout"},
		{bash.Request{Command: "true", StdoutMaxBytes: -1}, "StdoutMaxBytes"},
	} {
		_, err := e.Exec(context.Background(), c.req)
		requestErr(t, err, c.field, "")
	}
}

func TestExecInfrastructureFailures(t *testing.T) {
	e, _ := newExecutor(t, bash.Config{Env: []string{"PATH=/nonexistent"}})
	_, err := e.Exec(context.Background(), bash.Request{Command: "true"})
	require.ErrorIs(t, err, bash.ErrNotFound)
	var be *bash.Error
	require.True(t, errors.As(err, &be))
	assert.Equal(t, "exec", be.Op)
	text := bash.Render(bash.Result{}, err)
	assert.True(t, strings.HasPrefix(text, "[tool failure, not a failure of the command: the command could not be run: "), text)

	e2, _ := newExecutor(t, bash.Config{})
	require.NoError(t, e2.Close())
	_, err = e2.Exec(context.Background(), bash.Request{Command: "true"})
	require.ErrorIs(t, err, bash.ErrClosed)
	assert.Contains(t, bash.Render(bash.Result{}, err), "tool failure")
	_, err = e2.Start(context.Background(), bash.Request{Command: "true"})
	require.ErrorIs(t, err, bash.ErrClosed)
	require.ErrorIs(t, e2.Sweep(context.Background()), bash.ErrClosed)
	require.NoError(t, e2.Close(), "closing twice is safe")
}

// A survivor that writes to the output it holds keeps running after Exec returns: the pipe is
// read on, not closed under it (no SIGPIPE), until Close.
func TestExecWritingSurvivorLivesUntilClose(t *testing.T) {
	e, _ := newExecutor(t, bash.Config{})
	sig := testutil.NewSignals(t)
	res := exec(t, e, bash.Request{Command: "(i=0; while :; do echo tick; i=$((i+1)); echo $i > " + sig.Path + "; sleep 0.1; done) & echo started"})
	assert.True(t, res.PipesHeld)
	require.True(t, res.Lingering)
	var loop procinspect.Proc
	for _, s := range res.Survivors {
		if s.Comm == "bash" {
			loop = s
		}
	}
	require.NotZero(t, loop.Pid, "the looping subshell survives: %v", res.Survivors)
	// Five writes after the ones the result holds (a tick is written before its number).
	sig.WaitAtLeast(t, strings.Count(string(res.Stdout.Tail), "tick")+5)
	alive, err := procinspect.Alive(context.Background(), loop.Identity)
	require.NoError(t, err)
	assert.True(t, alive, "the survivor was not killed by a closed pipe")
	require.NoError(t, e.Close())
	alive, err = procinspect.Alive(context.Background(), loop.Identity)
	require.NoError(t, err)
	assert.False(t, alive, "Close ended the survivor")
}
