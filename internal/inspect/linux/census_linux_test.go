//go:build linux

package linux

import (
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
)

// startOf reads the start token of pid.
func startOf(t *testing.T, pid int) uint64 {
	t.Helper()
	st, err := ReadStat(pid)
	require.NoError(t, err)
	return st.StartTime
}

func TestCensusSince(t *testing.T) {
	cmds := startSleeps(t, 3)
	uid := os.Getuid()
	var c Census
	got, err := c.Since(uid, 0, nil)
	require.NoError(t, err)
	assert.True(t, slices.IsSortedFunc(got, func(a, b Entry) int { return a.Pid - b.Pid }), "pid order")
	assert.Contains(t, got, Entry{Pid: os.Getpid(), StartTime: startOf(t, os.Getpid())})
	var newest uint64
	for _, cmd := range cmds {
		start := startOf(t, cmd.Process.Pid)
		newest = max(newest, start)
		assert.Contains(t, got, Entry{Pid: cmd.Process.Pid, StartTime: start})
	}
	for _, e := range got {
		if br, err := ReadBrief(e.Pid); err == nil {
			assert.False(t, br.KernelThread(), "kernel thread %d listed", e.Pid)
		}
	}

	// The start fence, and the owner: both answered from what the first scan kept.
	later, err := c.Since(uid, newest+1, nil)
	require.NoError(t, err)
	for _, cmd := range cmds {
		assert.NotContains(t, pids(later), cmd.Process.Pid, "started before the fence")
	}
	other, err := c.Since(uid+54321, 0, nil)
	require.NoError(t, err)
	for _, cmd := range cmds {
		assert.NotContains(t, pids(other), cmd.Process.Pid, "owned by another user")
	}
}

func pids(es []Entry) []int {
	out := make([]int, len(es))
	for i, e := range es {
		out[i] = e.Pid
	}
	return out
}

func TestCensusReadsTheStatOfNewProcessesOnly(t *testing.T) {
	var reads []int
	c := Census{onStatRead: func(pid int) { reads = append(reads, pid) }}
	uid := os.Getuid()
	first := startSleeps(t, 3)
	_, err := c.Since(uid, 0, nil)
	require.NoError(t, err)
	for _, cmd := range first {
		assert.Contains(t, reads, cmd.Process.Pid)
	}

	reads = nil
	second := startSleeps(t, 1)
	got, err := c.Since(uid, 0, nil)
	require.NoError(t, err)
	assert.Contains(t, reads, second[0].Process.Pid, "a new process is read")
	for _, cmd := range first {
		assert.NotContains(t, reads, cmd.Process.Pid, "a process seen before is not read again")
		assert.Contains(t, pids(got), cmd.Process.Pid, "and is still listed")
	}

	// skip leaves a process out, one seen before or not; a new one skipped is not read.
	reads = nil
	third := startSleeps(t, 1)
	skipped := map[int]bool{first[0].Process.Pid: true, third[0].Process.Pid: true}
	got, err = c.Since(uid, 0, func(pid int) bool { return skipped[pid] })
	require.NoError(t, err)
	assert.NotContains(t, pids(got), first[0].Process.Pid)
	assert.NotContains(t, pids(got), third[0].Process.Pid)
	assert.Contains(t, pids(got), first[1].Process.Pid)
	assert.NotContains(t, reads, third[0].Process.Pid, "a skipped new process is not read")
}

// Scans may run alongside each other (for the race detector).
func TestCensusConcurrentScans(t *testing.T) {
	cmds := startSleeps(t, 2)
	var c Census
	uid := os.Getuid()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	lists := make([][]Entry, 4)
	for i := range errs {
		wg.Go(func() { lists[i], errs[i] = c.Since(uid, 0, nil) })
	}
	wg.Wait()
	for i := range errs {
		require.NoError(t, errs[i])
		for _, cmd := range cmds {
			assert.Contains(t, pids(lists[i]), cmd.Process.Pid)
		}
	}
}

// A process that gets the pid of one the census remembers is read afresh, so the start token
// of the old one never hides it. Forcing the pid needs root (ns_last_pid).
func TestCensusPidReuse(t *testing.T) {
	testutil.CanReusePids(t)

	var reads []int
	c := Census{onStatRead: func(pid int) { reads = append(reads, pid) }}
	uid := os.Getuid()
	old := exec.Command("sleep", "60")
	require.NoError(t, old.Start())
	pid := old.Process.Pid
	oldStart := startOf(t, pid)
	_, err := c.Since(uid, 0, nil)
	require.NoError(t, err)
	require.Contains(t, reads, pid)
	require.NoError(t, old.Process.Kill())
	old.Wait()

	// The new holder must start at a later clock tick than the old one (ticks are 10 ms).
	for tickNow(t) <= oldStart {
		time.Sleep(time.Millisecond)
	}
	testutil.ProcessWithPid(t, pid, nil)
	newStart := startOf(t, pid)
	require.Greater(t, newStart, oldStart)

	reads = nil
	got, err := c.Since(uid, oldStart+1, nil)
	require.NoError(t, err)
	assert.Contains(t, reads, pid, "the new holder of the pid is read afresh")
	assert.Contains(t, got, Entry{Pid: pid, StartTime: newStart})
}

// tickNow is the start token a process started now would get: field 22 counts clock ticks of
// 10 ms since boot, the first field of /proc/uptime seconds since boot.
func tickNow(t *testing.T) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/uptime")
	require.NoError(t, err)
	secs, _, _ := strings.Cut(string(b), " ")
	whole, frac, _ := strings.Cut(secs, ".")
	w, err := strconv.ParseUint(whole, 10, 64)
	require.NoError(t, err)
	cs, err := strconv.ParseUint((frac + "00")[:2], 10, 64)
	require.NoError(t, err)
	return w*100 + cs
}

func TestReadBriefAgreesWithReadStat(t *testing.T) {
	st, err := ReadStat(os.Getpid())
	require.NoError(t, err)
	br, err := ReadBrief(os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, st.Pid, br.Pid)
	assert.Equal(t, st.PPid, br.PPid)
	assert.Equal(t, st.Pgrp, br.Pgrp)
	assert.Equal(t, st.StartTime, br.StartTime)
	assert.False(t, br.KernelThread())
	assert.True(t, br.EnvReady())
	assert.Less(t, br.EnvStart, br.EnvEnd)

	_, err = ReadBrief(-1)
	assert.True(t, IsNotExist(err))
	_, err = ReadBrief(1 << 29)
	assert.True(t, IsNotExist(err))

	if kt, err := ReadStat(2); err == nil && kt.Comm == "kthreadd" {
		br, err := ReadBrief(2)
		require.NoError(t, err)
		assert.True(t, br.KernelThread())
		assert.False(t, br.EnvReady())
	}
}

func TestAppendEnviron(t *testing.T) {
	env, err := AppendEnviron([]byte("keep"), os.Getpid())
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(env, []byte("keep")))
	want := strings.Join(os.Environ(), "\x00")
	if want != "" {
		want += "\x00"
	}
	assert.Equal(t, want, string(env[len("keep"):]), "the environment this process started with")

	// Started with an empty environment: once its exec is complete (its stat says the
	// environment is in place), it reads empty.
	cmd := exec.Command("sleep", "60")
	cmd.Env = []string{}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	require.Eventually(t, func() bool {
		br, err := ReadBrief(cmd.Process.Pid)
		return err == nil && br.EnvReady()
	}, 5*time.Second, time.Millisecond, "the exec of sleep never completed")
	br, err := ReadBrief(cmd.Process.Pid)
	require.NoError(t, err)
	assert.Equal(t, br.EnvStart, br.EnvEnd, "an empty environment block")
	env, err = AppendEnviron(nil, cmd.Process.Pid)
	require.NoError(t, err)
	assert.Empty(t, env)

	env, err = AppendEnviron([]byte("keep"), 1<<29)
	assert.True(t, IsNotExist(err))
	assert.Equal(t, "keep", string(env), "nothing appended on an error")

	if kt, err := ReadStat(2); err == nil && kt.Comm == "kthreadd" && os.Getuid() == 0 {
		env, err := AppendEnviron(nil, 2)
		if err == nil {
			assert.Empty(t, env, "a kernel thread has no environment")
		} else {
			assert.ErrorIs(t, err, syscall.ESRCH)
		}
	}
}
