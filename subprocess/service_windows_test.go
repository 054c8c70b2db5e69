package subprocess_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/windows"

	"github.com/subkit/subkit/subprocess"
)

// The Service on Windows with real processes: the test binary is the program (see
// helper_windows_test.go), cmd.exe and ping.exe stand for the tools users run. `make
// test-windows` runs these under Wine.

// helper is a Spec that runs this test binary in helper mode with args.
func helper(t *testing.T, mode string, args ...string) subprocess.Spec {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	return subprocess.Spec{Path: self, Args: args, Env: []string{subprocess.WinHelperVar + "=" + mode}}
}

// gone waits until no pid of pids runs.
func gone(t *testing.T, pids ...int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for _, pid := range pids {
		for subprocess.Running(pid) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		assert.False(t, subprocess.Running(pid), "pid %d still runs", pid)
	}
}

// firstLine waits for the first line of h's stdout.
func firstLine(t *testing.T, h *subprocess.Handle) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		updated := h.Updated(subprocess.Stdout) // before the read, so no arrival is missed
		d, err := h.ReadOutput(subprocess.Stdout, 0, 0)
		require.NoError(t, err)
		if line, _, ok := strings.Cut(string(d.Data), "\n"); ok {
			return strings.TrimSpace(line)
		}
		require.False(t, d.Done, "stdout ended before a line: %q", d.Data)
		select {
		case <-updated:
		case <-time.After(time.Until(deadline)):
			t.Fatalf("no line on stdout: %q", d.Data)
		}
	}
}

func TestWindowsSpawnCollect(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	res := run(t, svc, helper(t, "echo", "to stdout\r\n", "to stderr", "3"))
	assert.Equal(t, 3, res.ExitCode)
	assert.Empty(t, res.Signal)
	assert.NoError(t, res.ExitErr)
	assert.Equal(t, "to stdout\r\n", string(res.Stdout.Tail))
	assert.Equal(t, "to stderr", string(res.Stderr.Tail))
	assert.Equal(t, int64(9), res.Stderr.TotalBytes)
	assert.False(t, res.PipesHeld)
	assert.False(t, res.TimedOut)
	assert.Positive(t, res.Pid)

	// cmd.exe, a program of the system rather than this binary.
	res = run(t, svc, subprocess.Spec{Path: "cmd", Args: []string{"/c", "echo hello& exit /b 4"}})
	assert.Equal(t, 4, res.ExitCode)
	assert.Equal(t, "hello", strings.TrimSpace(string(res.Stdout.Tail)))
}

func TestWindowsTailAndSpill(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	const n = 300_000
	spec := helper(t, "bytes", strconv.Itoa(n))
	spec.Stdout = subprocess.Output{Disposition: subprocess.Collect, TailBytes: 1000, SpillBytes: 1 << 20}
	res := run(t, svc, spec)
	require.Equal(t, 0, res.ExitCode)
	assert.Equal(t, int64(n), res.Stdout.TotalBytes)
	assert.True(t, res.Stdout.Truncated)
	assert.Equal(t, subprocess.WinPattern(n-1000, 1000), res.Stdout.Tail)
	require.NotEmpty(t, res.Stdout.SpillPath, "spill error: %v", res.Stdout.SpillErr)
	data, err := os.ReadFile(res.Stdout.SpillPath)
	require.NoError(t, err)
	assert.Equal(t, subprocess.WinPattern(0, n), data, "the spill file holds the whole stream")
	require.NoError(t, os.Remove(res.Stdout.SpillPath))

	// Larger than the spill cap: the incomplete spill is dropped, the tail is kept.
	spec.Stdout.SpillBytes = 100_000
	res = run(t, svc, spec)
	assert.Equal(t, int64(n), res.Stdout.TotalBytes)
	assert.True(t, res.Stdout.Truncated)
	assert.Empty(t, res.Stdout.SpillPath)
	assert.NoError(t, res.Stdout.SpillErr)
	assert.Equal(t, subprocess.WinPattern(n-1000, 1000), res.Stdout.Tail)
}

func TestWindowsReadOutputOffsets(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	const n = 50_000
	spec := helper(t, "bytes", strconv.Itoa(n))
	spec.Stdout = subprocess.Output{Disposition: subprocess.Collect, TailBytes: 4096, SpillBytes: 1 << 20}
	spec.Stderr = subprocess.Output{Disposition: subprocess.Collect, TailBytes: 4096} // empty
	h, err := svc.Spawn(ctxT(t, time.Minute), spec)
	require.NoError(t, err)
	defer h.Close()
	_, err = h.Wait(ctxT(t, time.Minute))
	require.NoError(t, err)

	d, err := h.ReadOutput(subprocess.Stdout, 100, 10)
	require.NoError(t, err)
	assert.Equal(t, subprocess.Delta{From: 100, Data: subprocess.WinPattern(100, 10), Next: 110, Total: n}, d,
		"older than the tail: read from the spill file")
	d, err = h.ReadOutput(subprocess.Stdout, n-10, 0)
	require.NoError(t, err)
	assert.Equal(t, subprocess.Delta{From: n - 10, Data: subprocess.WinPattern(n-10, 10), Next: n, Total: n, Done: true}, d)
	d, err = h.ReadOutput(subprocess.Stdout, n, 0)
	require.NoError(t, err)
	assert.True(t, d.Done)
	assert.Empty(t, d.Data)
	_, err = h.ReadOutput(subprocess.Stdout, n+1, 0)
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	d, err = h.ReadOutput(subprocess.Stderr, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, subprocess.Delta{Done: true}, d)

	// Without a spill file, what the tail no longer holds is reported as dropped.
	spec.Stdout.SpillBytes = 0
	h2, err := svc.Spawn(ctxT(t, time.Minute), spec)
	require.NoError(t, err)
	defer h2.Close()
	_, err = h2.Wait(ctxT(t, time.Minute))
	require.NoError(t, err)
	d, err = h2.ReadOutput(subprocess.Stdout, 0, 5)
	require.NoError(t, err)
	assert.Equal(t, subprocess.Delta{From: n - 4096, Data: subprocess.WinPattern(n-4096, 5), Next: n - 4096 + 5,
		Dropped: n - 4096, Total: n}, d)
}

func TestWindowsStdin(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	data := subprocess.WinPattern(0, 200_000) // more than a pipe buffer
	spec := helper(t, "cat")
	spec.Stdin = subprocess.Input{Kind: subprocess.InputBytes, Data: data}
	spec.Stdout.TailBytes = len(data)
	res := run(t, svc, spec)
	require.Equal(t, 0, res.ExitCode, "stderr: %s", res.Stderr.Tail)
	assert.Equal(t, data, res.Stdout.Tail)

	// The default stdin is the null device: an immediate end of file.
	res = run(t, svc, helper(t, "cat"))
	assert.Equal(t, 0, res.ExitCode, "stderr: %s", res.Stderr.Tail)
	assert.Empty(t, res.Stdout.Tail)

	// A pipe the caller writes and closes.
	spec = helper(t, "cat")
	spec.Stdin = subprocess.Input{Kind: subprocess.InputPipe}
	h, err := svc.Spawn(ctxT(t, time.Minute), spec)
	require.NoError(t, err)
	defer h.Close()
	_, err = h.Stdin().Write([]byte("typed\n"))
	require.NoError(t, err)
	require.NoError(t, h.Stdin().Close())
	r, err := h.Wait(ctxT(t, time.Minute))
	require.NoError(t, err)
	assert.Equal(t, "typed\n", string(r.Stdout.Tail))
}

// Stdin bytes that a grandchild holds but never reads do not hold the result: the writer is
// unblocked at settlement, and the grandchild, still running, is not ended by it.
func TestWindowsStdinHeldByAGrandchild(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	spec := helper(t, "holdin")
	spec.Stdin = subprocess.Input{Kind: subprocess.InputBytes, Data: subprocess.WinPattern(0, 4<<20)}
	spec.Grace = 100 * time.Millisecond
	h, err := svc.Spawn(ctxT(t, time.Minute), spec)
	require.NoError(t, err)
	defer h.Close()
	res, err := h.Wait(ctxT(t, 30*time.Second))
	require.NoError(t, err, "the result waited for the stdin writer")
	assert.Equal(t, 0, res.ExitCode)
	child, err := strconv.Atoi(strings.TrimSpace(string(res.Stdout.Tail)))
	require.NoError(t, err)
	assert.True(t, subprocess.Running(child))
	require.NoError(t, h.Terminate(ctxT(t, time.Minute)))
	gone(t, child)
}

// Windows names are case-insensitive: the scrub, the managed prefix, the allow-list and the
// merge of the spec's Env all fold case, and the child sees one entry per name.
func TestWindowsServiceEnvScrub(t *testing.T) {
	host := append(os.Environ(),
		"github_Token=t", "Api_Key=k", "aws_secret_access_key=s", "Db_Password=p", "my_passwd=p",
		"AzureCredentials=c", "dsh_session=1", "Dsh_Id=2", "KeyBoard_Layout=us", "Keep_Me=host")
	svc := newService(t, subprocess.Config{Env: host, AllowEnv: []string{"keyboard_layout"}})
	spec := helper(t, "env")
	spec.Env = append(spec.Env, "DSH_EXTRA=spec", "KEEP_ME=spec")
	spec.Stdout.TailBytes = 1 << 20
	res := run(t, svc, spec)
	require.Equal(t, 0, res.ExitCode)
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(res.Stdout.Tail)), "\n") {
		name, value, _ := strings.Cut(strings.TrimRight(line, "\r"), "=")
		if name == "" { // =C:=C:\... drive entries
			continue
		}
		_, dup := got[strings.ToUpper(name)]
		assert.False(t, dup, "%s appears twice", name)
		got[strings.ToUpper(name)] = value
	}
	for _, name := range []string{"GITHUB_TOKEN", "API_KEY", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "MY_PASSWD",
		"AZURECREDENTIALS", "DSH_SESSION", "DSH_ID"} {
		assert.NotContains(t, got, name)
	}
	assert.Equal(t, "us", got["KEYBOARD_LAYOUT"], "allow-listed whatever its case")
	assert.Equal(t, "spec", got["KEEP_ME"], "the spec's Env wins over the host's spelling")
	assert.Equal(t, "spec", got["DSH_EXTRA"], "the managed prefix is allowed in the spec's Env")
	assert.NotEmpty(t, got["SYSTEMROOT"])

	for _, kv := range svc.Env() {
		assert.NotContains(t, strings.ToUpper(kv), "TOKEN=")
	}
}

// PATHEXT decides which file a bare name runs; a batch file runs through cmd.exe.
func TestWindowsPathExt(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tool.cmd"), []byte("@echo from tool.cmd %1\r\n"), 0o644))
	self, err := os.Executable()
	require.NoError(t, err)
	exe, err := os.ReadFile(self)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tool.exe"), exe, 0o755))

	env := append(os.Environ(), "PATH="+dir+`;C:\windows\system32`)
	svc := newService(t, subprocess.Config{Env: env})
	got, err := svc.ResolveExecutable("tool")
	require.NoError(t, err)
	assert.True(t, strings.EqualFold(filepath.Join(dir, "tool.exe"), got), "default PATHEXT: .exe before .cmd: %s", got)

	spec := subprocess.Spec{Path: "tool", Args: []string{"arg"}, Env: []string{"PathExt=.CMD;.EXE"}}
	res := run(t, svc, spec)
	require.Equal(t, 0, res.ExitCode, "stderr: %s", res.Stderr.Tail)
	assert.Equal(t, "from tool.cmd arg", strings.TrimSpace(string(res.Stdout.Tail)), "the spec's PATHEXT puts .cmd first")

	spec = subprocess.Spec{Path: "tool", Args: []string{"hi", "", "0"}, Env: []string{subprocess.WinHelperVar + "=echo"}}
	res = run(t, svc, spec)
	require.Equal(t, 0, res.ExitCode, "stderr: %s", res.Stderr.Tail)
	assert.Equal(t, "hi", string(res.Stdout.Tail), "tool resolved to tool.exe, this binary")

	_, err = svc.Spawn(ctxT(t, time.Minute), subprocess.Spec{Path: "tool", Env: []string{"PATHEXT=.PS1"}})
	assert.ErrorIs(t, err, subprocess.ErrNotFound)
	var e *subprocess.Error
	require.ErrorAs(t, err, &e)
	assert.Contains(t, e.Error(), dir, "the error names the PATH searched, as it is")
}

func TestWindowsStartErrors(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	_, err := svc.Spawn(ctxT(t, time.Minute), subprocess.Spec{Path: "no-such-program-here"})
	assert.ErrorIs(t, err, subprocess.ErrNotFound)

	dir := t.TempDir()
	_, err = svc.Spawn(ctxT(t, time.Minute), subprocess.Spec{Path: dir})
	assert.ErrorIs(t, err, subprocess.ErrPermission, "a directory is not a program")

	_, err = svc.Spawn(ctxT(t, time.Minute), subprocess.Spec{Path: "cmd", Dir: filepath.Join(dir, "missing")})
	assert.ErrorIs(t, err, subprocess.ErrNotFound)
}

// A file that is no program: Windows refuses it with ERROR_BAD_EXE_FORMAT, which the Service
// reports as not executable, with a hint. A file without an extension is refused before: os/exec
// on Windows would not start it.
func TestWindowsBadExeFormat(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.exe")
	require.NoError(t, os.WriteFile(bad, []byte("not a program\r\n"), 0o755))
	_, err := svc.Spawn(ctxT(t, time.Minute), subprocess.Spec{Path: bad})
	require.ErrorIs(t, err, subprocess.ErrPermission)
	assert.ErrorIs(t, err, windows.ERROR_BAD_EXE_FORMAT)
	var e *subprocess.Error
	require.ErrorAs(t, err, &e)
	assert.Contains(t, e.Hint, "not a program Windows can run")

	noext := filepath.Join(dir, "noext")
	require.NoError(t, os.WriteFile(noext, []byte("not a program\r\n"), 0o755))
	_, err = svc.Spawn(ctxT(t, time.Minute), subprocess.Spec{Path: noext})
	require.ErrorIs(t, err, subprocess.ErrPermission)
	assert.ErrorContains(t, err, "has no extension")
	_, err = svc.ResolveExecutable(noext)
	assert.ErrorIs(t, err, subprocess.ErrPermission)
}

// Terminate ends the whole tree through its job: the leader and the grandchild it started.
func TestWindowsTerminateTree(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	spec := helper(t, "tree")
	spec.Grace = 100 * time.Millisecond
	h, err := svc.Spawn(ctxT(t, time.Minute), spec)
	require.NoError(t, err)
	defer h.Close()
	child, err := strconv.Atoi(firstLine(t, h))
	require.NoError(t, err)
	require.True(t, subprocess.Running(child))

	start := time.Now()
	require.NoError(t, h.Terminate(ctxT(t, time.Minute)))
	assert.Less(t, time.Since(start), 10*time.Second)
	gone(t, h.Pid(), child)
	require.NoError(t, h.WaitForExit(ctxT(t, time.Minute)))
	res, err := h.Wait(ctxT(t, time.Minute))
	require.NoError(t, err)
	assert.Equal(t, 1, res.ExitCode, "TerminateJobObject's exit code")
	assert.False(t, res.TimedOut)
	assert.NoError(t, h.Terminate(ctxT(t, time.Minute)), "a second Terminate finds nothing to do")
	assert.NoError(t, h.Signal(os.Kill), "a tree already gone is not an error")
	assert.ErrorIs(t, h.Signal(syscall.SIGTERM), subprocess.ErrInvalid, "Windows has no SIGTERM")
}

// Timeout terminates the tree, grandchildren included, and says so.
func TestWindowsTimeout(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	spec := helper(t, "tree")
	spec.Grace = 100 * time.Millisecond
	spec.Timeout = 3 * time.Second // room for the helper to start its child and print its pid on a busy machine
	res := run(t, svc, spec)
	assert.True(t, res.TimedOut)
	assert.Equal(t, 1, res.ExitCode)
	child, err := strconv.Atoi(strings.TrimSpace(string(res.Stdout.Tail)))
	require.NoError(t, err)
	gone(t, child)
}

// WaitForExit waits for the job to be empty, not for the leader alone.
func TestWindowsWaitForExitCountsTheJob(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	h, err := svc.Spawn(ctxT(t, time.Minute), helper(t, "linger", "1500"))
	require.NoError(t, err)
	defer h.Close()
	res, err := h.Wait(ctxT(t, time.Minute))
	require.NoError(t, err)
	require.Equal(t, 0, res.ExitCode)
	child, err := strconv.Atoi(strings.TrimSpace(string(res.Stdout.Tail)))
	require.NoError(t, err)
	require.True(t, subprocess.Running(child), "the grandchild outlives the leader")

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, h.WaitForExit(ctx), context.DeadlineExceeded, "the grandchild still runs in the job")
	require.NoError(t, h.WaitForExit(ctxT(t, time.Minute)))
	assert.False(t, subprocess.Running(child), "WaitForExit returned before the grandchild was gone")
}

// The drain bound: a grandchild that holds stdout does not hold the result. It settles after
// DrainGrace with PipesHeld; the grandchild's output is read on after it, until Terminate.
func TestWindowsDrainBound(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	spec := helper(t, "hold")
	spec.DrainGrace = 300 * time.Millisecond
	spec.Grace = 100 * time.Millisecond
	h, err := svc.Spawn(ctxT(t, time.Minute), spec)
	require.NoError(t, err)
	defer h.Close()
	start := time.Now()
	res, err := h.Wait(ctxT(t, 30*time.Second))
	require.NoError(t, err, "the result waited for the grandchild that holds stdout")
	assert.Less(t, time.Since(start), 10*time.Second)
	assert.True(t, res.PipesHeld)
	assert.Equal(t, 0, res.ExitCode)
	child, err := strconv.Atoi(firstLine(t, h))
	require.NoError(t, err)
	require.True(t, subprocess.Running(child), "settling ended nothing")

	// The stream goes on after the result.
	settled := res.Stdout.TotalBytes
	deadline := time.Now().Add(30 * time.Second)
	for {
		updated := h.Updated(subprocess.Stdout) // before the read, so no arrival is missed
		d, err := h.ReadOutput(subprocess.Stdout, 0, 0)
		require.NoError(t, err)
		if d.Total > settled+50 {
			assert.Contains(t, string(d.Data), "tick ")
			break
		}
		select {
		case <-updated:
		case <-time.After(time.Until(deadline)):
			t.Fatal("no output read after settlement")
		}
	}

	require.NoError(t, h.Terminate(ctxT(t, time.Minute)))
	gone(t, child)
	streamEnds(t, h)
}

// The shape users hit: cmd leaves `start /b` ping running on its stdout.
func TestWindowsDrainBoundCmdStart(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	spec := subprocess.Spec{Path: "cmd", Args: []string{"/c", "start /b ping -n 1000 127.0.0.1 & echo started"},
		DrainGrace: 300 * time.Millisecond, Grace: 100 * time.Millisecond}
	h, err := svc.Spawn(ctxT(t, time.Minute), spec)
	require.NoError(t, err)
	defer h.Close()
	res, err := h.Wait(ctxT(t, 30*time.Second))
	require.NoError(t, err, "the result waited for ping")
	assert.True(t, res.PipesHeld)
	assert.Contains(t, string(res.Stdout.Tail), "started")
	require.NoError(t, h.Terminate(ctxT(t, time.Minute)))
	require.NoError(t, h.WaitForExit(ctxT(t, time.Minute)))
	streamEnds(t, h)
}

// A pipe held outside the tree (the leader handed a duplicate of its stdout to this process)
// stays open once the whole tree is gone: Close cuts the read, and returns at once, instead of
// leaving the pump blocked for as long as the holder lives.
func TestWindowsCloseCutsAPipeHeldOutsideTheTree(t *testing.T) {
	for _, how := range []string{"close", "terminate"} {
		t.Run(how, func(t *testing.T) {
			svc := newService(t, subprocess.Config{})
			spec := helper(t, "handoff", strconv.Itoa(os.Getpid()))
			spec.DrainGrace = 200 * time.Millisecond
			spec.Grace = 5 * time.Second // Close would wait that long, and more, for a blocked pump
			h, err := svc.Spawn(ctxT(t, time.Minute), spec)
			require.NoError(t, err)
			res, err := h.Wait(ctxT(t, 30*time.Second))
			require.NoError(t, err)
			require.Equal(t, 0, res.ExitCode, "stderr: %s", res.Stderr.Tail)
			assert.True(t, res.PipesHeld)
			v, err := strconv.ParseUint(strings.TrimSpace(string(res.Stdout.Tail)), 10, 64)
			require.NoError(t, err)
			held := windows.Handle(v)
			defer windows.CloseHandle(held)
			_, err = windows.Write(held, []byte("from the holder\n"))
			require.NoError(t, err, "this process holds the write end")

			start := time.Now()
			if how == "close" {
				require.NoError(t, h.Close())
			} else {
				require.NoError(t, h.Terminate(ctxT(t, time.Minute)))
			}
			streamEnds(t, h)
			assert.Less(t, time.Since(start), 3*time.Second)
			d, err := h.ReadOutput(subprocess.Stdout, 0, 0)
			require.NoError(t, err)
			assert.Contains(t, string(d.Data), "from the holder", "what the pipe held was read")
			require.NoError(t, h.Close())
		})
	}
}

// streamEnds waits until h's stdout has ended (its pump returned).
func streamEnds(t *testing.T, h *subprocess.Handle) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		updated := h.Updated(subprocess.Stdout) // before the read, so the end is not missed
		d, err := h.ReadOutput(subprocess.Stdout, 0, 0)
		require.NoError(t, err)
		if d.Done {
			return
		}
		select {
		case <-updated:
		case <-time.After(time.Until(deadline)):
			t.Fatal("stdout still read 10s on")
		}
	}
}

// Close ends every live tree, grandchildren included, removes the runtime root, and is safe to
// call twice.
func TestWindowsServiceClose(t *testing.T) {
	tmp := t.TempDir()
	svc, err := subprocess.New(subprocess.Config{TempDir: tmp, SpillDir: t.TempDir()})
	require.NoError(t, err)
	root := svc.RuntimeRoot()
	require.DirExists(t, root)
	var pids []int
	for range 2 {
		spec := helper(t, "tree")
		spec.Grace = 100 * time.Millisecond
		h, err := svc.Spawn(ctxT(t, time.Minute), spec)
		require.NoError(t, err)
		child, err := strconv.Atoi(firstLine(t, h))
		require.NoError(t, err)
		pids = append(pids, h.Pid(), child)
	}
	require.NoError(t, svc.Close())
	gone(t, pids...)
	assert.NoDirExists(t, root)
	assert.NoError(t, svc.Close(), "closing twice is safe")
	_, err = svc.Spawn(ctxT(t, time.Minute), helper(t, "sleep"))
	assert.True(t, errors.Is(err, subprocess.ErrClosed), "%v", err)
}
