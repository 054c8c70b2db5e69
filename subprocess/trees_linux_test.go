package subprocess_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/procinspect"
	"github.com/subkit/subkit/subprocess"
)

// identityOf reads pid's identity, failing the test when it is not a live process.
func identityOf(t *testing.T, pid int) procinspect.Identity {
	t.Helper()
	p, err := procinspect.Lookup(context.Background(), pid)
	require.NoError(t, err)
	require.False(t, p.Zombie, "pid %d is a zombie", pid)
	return p.Identity
}

// killOnCleanup makes sure a process the leak check cannot see (it cleared its environment)
// does not outlive the test, whatever the test concluded.
func killOnCleanup(t *testing.T, id procinspect.Identity) {
	t.Cleanup(func() {
		if ok, _ := procinspect.Alive(context.Background(), id); ok {
			syscall.Kill(id.Pid, syscall.SIGKILL)
		}
	})
}

func isAlive(id procinspect.Identity) bool {
	ok, _ := procinspect.Alive(context.Background(), id)
	return ok
}

// A member of the tree's own group that cleared its environment carries no cookie; the held
// leader keeps the group number the tree's, so the group signal still reaches it, whichever
// way the environment was cleared.
func TestClearedEnvironmentMemberIsEnded(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is needed for one of the cases")
	}
	cases := map[string]string{
		"env -i":  `env -i sleep 300 >/dev/null 2>&1 & echo $!`,
		"exec -c": `(exec -c sleep 300 >/dev/null 2>&1) & echo $!`,
		"os.execve": `python3 -c 'import os,sys
pid = os.fork()
if pid == 0:
    n = os.open("/dev/null", os.O_WRONLY); os.dup2(n, 1); os.dup2(n, 2)
    os.execve("/bin/sleep", ["sleep", "300"], {})
print(pid)'`,
	}
	for name, script := range cases {
		t.Run(name, func(t *testing.T) {
			svc := newService(t, subprocess.Config{})
			h, err := svc.Spawn(context.Background(), sh(script))
			require.NoError(t, err)
			defer h.Close()
			res, err := h.Wait(ctxT(t, 10*time.Second))
			require.NoError(t, err)
			pid, err := strconv.Atoi(strings.TrimSpace(string(res.Stdout.Tail)))
			require.NoError(t, err, "stdout %q", res.Stdout.Tail)
			id := identityOf(t, pid)
			killOnCleanup(t, id)
			require.Eventually(t, func() bool { // $! names the process before it execs
				env, err := procinspect.Environ(context.Background(), pid)
				return err == nil && len(env) == 0 && identityOf(t, pid) == id
			}, 5*time.Second, time.Millisecond, "the member runs with an empty environment")

			short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			assert.Error(t, h.WaitForExit(short), "the member still runs: the tree is not gone")
			require.NoError(t, h.Terminate(ctxT(t, 10*time.Second)))
			assert.False(t, isAlive(id), "Terminate ended the member")
			require.NoError(t, h.WaitForExit(ctxT(t, 5*time.Second)))
		})
	}
	t.Run("Service.Close", func(t *testing.T) {
		svc, err := subprocess.New(subprocess.Config{TempDir: t.TempDir(), SpillDir: t.TempDir()})
		require.NoError(t, err)
		h, err := svc.Spawn(context.Background(), sh(`env -i sleep 300 >/dev/null 2>&1 & echo $!`))
		require.NoError(t, err)
		res, err := h.Wait(ctxT(t, 10*time.Second))
		require.NoError(t, err)
		pid, err := strconv.Atoi(strings.TrimSpace(string(res.Stdout.Tail)))
		require.NoError(t, err)
		id := identityOf(t, pid)
		killOnCleanup(t, id)
		require.NoError(t, svc.Close())
		assert.False(t, isAlive(id), "Service.Close ended the member")
	})
}

// A daemon the call meant to leave running keeps running after the result settles: its pipe is
// read on, never closed under it, and its later output is readable by offset.
func TestDaemonOutlivesTheResultAndItsOutputIsRead(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	spec := sh(`(while :; do echo tick; sleep 0.1; done) & echo started`)
	spec.DrainGrace = 200 * time.Millisecond
	spec.Stdout.SpillBytes = 1 << 20
	spec.Stdout.TailBytes = 16
	h, err := svc.Spawn(context.Background(), spec)
	require.NoError(t, err)
	defer h.Close()
	res, err := h.Wait(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.True(t, res.PipesHeld)
	atSettle := res.Stdout.TotalBytes
	all, err := h.Members(context.Background())
	require.NoError(t, err)
	var members []procinspect.Proc // the looping subshell; its sleeps come and go
	for _, m := range all {
		if m.Comm == "bash" {
			members = append(members, m)
		}
	}
	require.NotEmpty(t, members, "%v", all)

	// The daemon's own pace: wait for its output until ten more ticks have come.
	ctx := ctxT(t, 60*time.Second)
	var d subprocess.Delta
	for {
		updated := h.Updated(subprocess.Stdout) // before the read, so no arrival is missed
		d, err = h.ReadOutput(subprocess.Stdout, 0, 0)
		require.NoError(t, err)
		require.False(t, d.Done)
		if d.Total-atSettle >= int64(len("tick\n")*10) {
			break
		}
		select {
		case <-updated:
		case <-ctx.Done():
			t.Fatalf("the daemon wrote %d bytes after settlement, want ten ticks", d.Total-atSettle)
		}
	}
	assert.Zero(t, d.Dropped, "bytes past the tail come from the spill file, which grew on")
	assert.Contains(t, string(d.Data[:min(len(d.Data), 40)]), "started\n", "the whole stream, from its start")
	for _, m := range members {
		assert.True(t, isAlive(m.Identity), "the daemon is alive ten ticks after settlement (no SIGPIPE)")
	}
	spill, err := os.ReadFile(res.Stdout.SpillPath)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, int64(len(spill)), d.Total-16, "the published spill file grows with the stream")

	require.NoError(t, h.Terminate(ctxT(t, 10*time.Second)))
	for _, m := range members {
		assert.False(t, isAlive(m.Identity))
	}
	select {
	case <-h.Updated(subprocess.Stdout):
	case <-time.After(5 * time.Second):
		t.Fatal("the stream did not end after Terminate")
	}
	d, err = h.ReadOutput(subprocess.Stdout, d.Next, 0)
	require.NoError(t, err)
	assert.True(t, d.Done, "the stream ended with the daemon")
}

// Thousands of live trees hold no OS thread each.
func TestLiveTreesHoldNoThreadEach(t *testing.T) {
	const n = 1000
	svc := newService(t, subprocess.Config{})
	hs := make([]*subprocess.Handle, 0, n)
	for range n {
		h, err := svc.Spawn(context.Background(), quiet(subprocess.Spec{Path: "sleep", Args: []string{"1000"}}))
		require.NoError(t, err)
		hs = append(hs, h)
	}
	threads := threadCount(t)
	t.Logf("%d live trees, %d threads", n, threads)
	assert.Less(t, threads, 50)
	require.NoError(t, svc.Close())
	for _, h := range hs {
		require.NoError(t, h.Close())
	}
	assert.Less(t, threadCount(t), 50, "after Close")
}

func threadCount(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("no Threads line in /proc/self/status")
	return 0
}

// The timeout bounds the whole result: when it fires during the drain it ends the daemon
// holding the pipe, and the Result says TimedOut. The timeout fires once the leader has exited
// and its output has been read, while the daemon still holds the pipe.
func TestTimeoutBoundsTheDrain(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	fire := subprocess.ManualTimeouts(svc)
	spec := sh(`sleep 1000 & echo x`)
	spec.Timeout, spec.DrainGrace, spec.Grace = time.Hour, time.Hour, 500*time.Millisecond
	h, err := svc.Spawn(context.Background(), spec)
	require.NoError(t, err)
	defer h.Close()
	<-subprocess.LeaderDone(h) // the leader exited; its output is in, the daemon holds the pipe
	fire()
	res, err := h.Wait(ctxT(t, 30*time.Second))
	require.NoError(t, err, "settled by the timeout, not the hour-long drain")
	assert.True(t, res.TimedOut)
	assert.Equal(t, 0, res.ExitCode, "the leader exited on its own")
	assert.Equal(t, "x\n", string(res.Stdout.Tail))
	require.NoError(t, h.WaitForExit(ctxT(t, 30*time.Second)), "the daemon was ended")
}

// A leader that exits on its own, its pipes drained, before the timeout is not TimedOut,
// even when the timeout fires while the result settles: the timeout fires only once the
// tree is gone and the pipes have been read to their end (collected), or at once (discarded).
func TestTimeoutNotSetForALeaderThatExitedOnItsOwn(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	for i := range 20 {
		fire := subprocess.ManualTimeouts(svc)
		spec := subprocess.Spec{Path: "true", Timeout: time.Hour}
		if i%2 == 1 {
			spec.Stdout.Disposition, spec.Stderr.Disposition = subprocess.Discard, subprocess.Discard
		}
		h, err := svc.Spawn(context.Background(), spec)
		require.NoError(t, err)
		require.NoError(t, h.WaitForExit(ctxT(t, 30*time.Second)))
		<-subprocess.PumpsDone(h)
		fire()
		res, err := h.Wait(ctxT(t, 30*time.Second))
		require.NoError(t, err)
		assert.False(t, res.TimedOut)
		assert.Equal(t, 0, res.ExitCode)
		require.NoError(t, h.Close())
	}
}

// A relative Path is taken against Dir, as os/exec does.
func TestRelativePathIsTakenAgainstDir(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "run.sh"), []byte("#!/bin/sh\necho ran in $PWD\n"), 0o755))
	res := run(t, svc, subprocess.Spec{Path: "./run.sh", Dir: dir})
	assert.Equal(t, 0, res.ExitCode)
	assert.Equal(t, "ran in "+dir+"\n", string(res.Stdout.Tail))
	_, err := svc.Spawn(context.Background(), subprocess.Spec{Path: "./run.sh"})
	assert.ErrorIs(t, err, subprocess.ErrNotFound, "not in the Service's cwd")
}

func TestBadInputIsTypedAndWrapped(t *testing.T) {
	svc := newService(t, subprocess.Config{MaxLive: 2})
	ctx := context.Background()
	_, err := svc.Spawn(ctx, subprocess.Spec{Path: "echo", Args: []string{"a\x00b"}})
	assert.ErrorIs(t, err, subprocess.ErrInvalid, "NUL in Args")
	_, err = svc.Spawn(ctx, subprocess.Spec{Path: "echo", Stdout: subprocess.Output{TailBytes: 1 << 40}})
	assert.ErrorIs(t, err, subprocess.ErrInvalid, "TailBytes above the maximum")
	_, err = svc.Spawn(ctx, subprocess.Spec{Path: "echo", Args: []string{strings.Repeat("x", 200<<10)}})
	assert.ErrorIs(t, err, subprocess.ErrLimit, "an argument over MAX_ARG_STRLEN is E2BIG")
	assert.ErrorIs(t, err, syscall.E2BIG)
	t.Log(err)

	h1, err := svc.Spawn(ctx, quiet(subprocess.Spec{Path: "sleep", Args: []string{"100"}}))
	require.NoError(t, err)
	defer h1.Close()
	h2, err := svc.Spawn(ctx, quiet(subprocess.Spec{Path: "sleep", Args: []string{"100"}}))
	require.NoError(t, err)
	defer h2.Close()
	_, err = svc.Spawn(ctx, subprocess.Spec{Path: "true"})
	assert.ErrorIs(t, err, subprocess.ErrLimit, "MaxLive reached")
	t.Log(err)
	assert.ErrorIs(t, h1.Signal(syscall.Signal(999)), subprocess.ErrInvalid)
	assert.ErrorIs(t, h1.Signal(nil), subprocess.ErrInvalid)
	require.NoError(t, h1.Close())
	h3, err := svc.Spawn(ctx, subprocess.Spec{Path: "true"})
	require.NoError(t, err, "a slot is free once a tree has ended")
	h3.Close()

	_, err = subprocess.New(subprocess.Config{TempDir: "/no/such/dir"})
	assert.ErrorIs(t, err, subprocess.ErrNotFound)
	_, err = subprocess.New(subprocess.Config{Env: []string{"NOEQUALS"}})
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	_, err = subprocess.New(subprocess.Config{MaxLive: -1})
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
}

// Every method of a zero or nil Handle and Service, and every method given a nil
// context, returns an error and never panics, not even in a goroutine the kit starts: run in a
// child process, so a crash there cannot take the test binary down.
func TestZeroValuesNeverPanic(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), hostModeVar+"=zero-values")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Equal(t, "zero values: ok\n", string(out))
}

// Spill files of one Service share one lazily made directory; a spill that is dropped leaves
// no directory behind.
func TestOneSpillDirectoryPerService(t *testing.T) {
	spillDir := t.TempDir()
	svc := newService(t, subprocess.Config{SpillDir: spillDir})
	big := sh(`seq 1 20000`)
	big.Stdout.SpillBytes = 1 << 20
	big.Stdout.TailBytes = 100
	a, b := run(t, svc, big), run(t, svc, big)
	require.NotEmpty(t, a.Stdout.SpillPath)
	assert.Equal(t, filepath.Dir(a.Stdout.SpillPath), filepath.Dir(b.Stdout.SpillPath))
	over := big
	over.Stdout.SpillBytes = 1000
	for range 5 {
		r := run(t, svc, over)
		assert.Empty(t, r.Stdout.SpillPath)
	}
	ents, err := os.ReadDir(spillDir)
	require.NoError(t, err)
	assert.Len(t, ents, 1, "one spill directory for the Service")
}
