package posix_test

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/posix"
	"github.com/subkit/subkit/procinspect"
)

// One ExitSet learns of many exits, each once and unreaped, and reaps on request only what has
// exited.
func TestExitSet(t *testing.T) {
	set, err := posix.NewExitSet()
	require.NoError(t, err)
	t.Cleanup(func() { // what a failed test left: killed and reaped by pid
		for _, pid := range set.Pids() {
			syscall.Kill(pid, syscall.SIGKILL)
			syscall.Wait4(pid, nil, 0, nil)
		}
		set.Close()
	})
	add := func(args ...string) int {
		cmd := exec.Command(args[0], args[1:]...)
		require.NoError(t, cmd.Start())
		pid := cmd.Process.Pid
		require.NoError(t, set.Add(cmd.Process))
		return pid
	}
	want := map[int]posix.Exit{}
	for code := range 20 {
		want[add("sh", "-c", "exit "+strconv.Itoa(code%10))] = posix.Exit{Code: code % 10}
	}
	running := add("sleep", "1000")
	killed := add("sleep", "1000")
	want[killed] = posix.Exit{Code: -1, Signal: syscall.SIGKILL}
	require.NoError(t, syscall.Kill(killed, syscall.SIGKILL))

	got := map[int]posix.Exit{}
	for len(got) < len(want) {
		exits, err := set.Wait()
		require.NoError(t, err)
		for _, e := range exits {
			_, dup := got[e.Pid]
			require.False(t, dup, "pid %d reported twice", e.Pid)
			assert.Positive(t, e.Usage.MaxRSS, "the wait status's resource usage")
			e.Usage = posix.Usage{}
			got[e.Pid] = e.Exit
		}
	}
	assert.Equal(t, want, got)
	assert.Len(t, set.Pids(), len(want)+1)

	for pid := range want {
		p, err := procinspect.Lookup(t.Context(), pid)
		require.NoError(t, err, "an exited child stays until reaped")
		assert.True(t, p.Zombie)
		require.NoError(t, set.Reap(pid))
		assert.False(t, set.Has(pid))
		assert.Error(t, set.Reap(pid), "reaped twice")
	}
	assert.ErrorContains(t, set.Reap(running), "still running")
	assert.True(t, set.Has(running))

	// Close ends a Wait in progress; the running child is left to be reaped by pid.
	waited := make(chan error, 1)
	go func() { _, err := set.Wait(); waited <- err }()
	time.Sleep(10 * time.Millisecond) // let it park in the poller; it returns either way
	require.NoError(t, set.Close())
	require.NoError(t, set.Close(), "closing twice is safe")
	assert.ErrorIs(t, <-waited, os.ErrClosed)
	cmd := exec.Command("true")
	require.NoError(t, cmd.Start())
	assert.Error(t, set.Add(cmd.Process), "a closed set takes nothing")
	cmd.Wait()
	syscall.Kill(running, syscall.SIGKILL)
	_, err = syscall.Wait4(running, nil, 0, nil)
	require.NoError(t, err)
}
