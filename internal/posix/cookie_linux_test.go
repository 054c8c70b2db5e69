package posix

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/inspect/linux"
	"github.com/subkit/subkit/procinspect"
)

// noGroup is a process group id no process is in: a Find given it skips nothing.
const noGroup = -1

// startN starts n `sleep 1000` with environment env (empty when env is empty but not nil)
// and waits until each has completed its exec, so none is caught in the middle of it. They
// are killed and reaped at cleanup.
func startN(t *testing.T, n int, env []string) []int {
	t.Helper()
	var cmds []*exec.Cmd
	t.Cleanup(func() {
		for _, c := range cmds {
			c.Process.Kill()
		}
		for _, c := range cmds {
			c.Wait()
		}
	})
	pids := make([]int, n)
	for i := range pids {
		c := exec.Command("sleep", "1000")
		c.Env = env
		require.NoError(t, c.Start())
		cmds = append(cmds, c)
		pids[i] = c.Process.Pid
	}
	for _, pid := range pids {
		require.Eventually(t, func() bool {
			b, err := linux.ReadBrief(pid)
			return err == nil && b.EnvReady()
		}, 10*time.Second, time.Millisecond, "the exec of pid %d never completed", pid)
	}
	return pids
}

// Many processes of this user started after the cookie, half of them with an empty
// environment: each environment is read once, and the empty ones cost no second look (a
// blanket pause per empty environment would cost a millisecond each). A Find without a start
// fence reads no kernel thread's environment.
func TestFindPausesOnlyForExecAndReadsNoKernelThread(t *testing.T) {
	const n = 40
	c := NewCookie()
	empty := startN(t, n, []string{})
	plain := startN(t, n, os.Environ())
	ctx := context.Background()

	var st findStats
	found, err := c.find(ctx, noGroup, &st)
	require.NoError(t, err)
	assert.Empty(t, found)
	for _, pid := range append(empty, plain...) {
		assert.Equal(t, 1, st.environReads[pid], "environment of pid %d read once", pid)
		assert.NotContains(t, st.relooked, pid, "pid %d looked at again", pid)
	}
	// Other processes of this user may be caught in the middle of execve; they share one
	// budget. A pause per empty environment would have cost 40 here.
	assert.LessOrEqual(t, st.paused, execPauseBudget)

	// The same name without a fence: every process of this user is a candidate, and kernel
	// threads (which, for root, are of this user) still are not. No group is skipped (group
	// 0, which kernel threads are in, would be).
	unfenced := CookieFromEnv(c.name + "=0")
	require.NotNil(t, unfenced)
	require.Zero(t, unfenced.since)
	st = findStats{}
	found, err = unfenced.find(ctx, noGroup, &st)
	require.NoError(t, err)
	assert.Empty(t, found)
	assert.Equal(t, 1, st.environReads[os.Getpid()], "this process is a candidate")
	kthreads := 0
	for pid := range st.environReads {
		if b, err := linux.ReadBrief(pid); err == nil && b.KernelThread() {
			kthreads++
			t.Errorf("the environment of kernel thread %d was read", pid)
		}
	}
	assert.Zero(t, kthreads)
	assert.LessOrEqual(t, st.paused, execPauseBudget)
}

// A process of this user that carries the cookie's name but started before the cookie's
// token is neither matched nor read.
func TestFindDoesNotReadProcessesOlderThanTheCookie(t *testing.T) {
	c := NewCookie()
	pid := startN(t, 1, append(os.Environ(), c.Env()))[0]
	ctx := context.Background()
	p, err := procinspect.Lookup(ctx, pid)
	require.NoError(t, err)

	// The control: the cookie it was started with finds it.
	require.Eventually(t, func() bool {
		found, err := c.find(ctx, 0, nil)
		return err == nil && len(found) == 1 && found[0] == p.Identity
	}, 5*time.Second, 10*time.Millisecond)

	later := CookieFromEnv(c.name + "=" + strconv.FormatUint(p.Start+1, 10))
	var st findStats
	found, err := later.find(ctx, 0, &st)
	require.NoError(t, err)
	assert.Empty(t, found)
	assert.Zero(t, st.environReads[pid], "an older process's environment is not read")
}

// A zombie that carried the cookie is not found, and its environment, gone with its memory, is
// not looked at again.
func TestFindSkipsZombies(t *testing.T) {
	c := NewCookie()
	cmd := exec.Command("true")
	cmd.Env = append(os.Environ(), c.Env())
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Wait() })
	pid := cmd.Process.Pid
	require.Eventually(t, func() bool {
		b, err := linux.ReadBrief(pid)
		return err == nil && b.Zombie()
	}, 5*time.Second, time.Millisecond)

	var st findStats
	found, err := c.find(context.Background(), 0, &st)
	require.NoError(t, err)
	assert.Empty(t, found)
	assert.NotContains(t, st.relooked, pid)
}

func TestFindHonoursContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := NewCookie().Find(ctx, 0)
	assert.ErrorIs(t, err, context.Canceled)
}
