//go:build linux

package linux

import (
	"encoding/binary"
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
	"golang.org/x/sys/unix"
)

// leftoverChildren lists this test binary's children that still exist,
// reaped or not.
func leftoverChildren() []int {
	stats, err := ReadAll()
	if err != nil {
		return []int{-1}
	}
	var left []int
	for _, st := range stats {
		if st.PPid == os.Getpid() {
			left = append(left, st.Pid)
		}
	}
	return left
}

// startSleeps starts n `sleep` children and kills and reaps them at cleanup.
func startSleeps(tb testing.TB, n int) []*exec.Cmd {
	tb.Helper()
	cmds := make([]*exec.Cmd, 0, n)
	tb.Cleanup(func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
		}
		for _, c := range cmds {
			_ = c.Wait()
		}
	})
	for range n {
		c := exec.Command("sleep", "60")
		require.NoError(tb, c.Start())
		cmds = append(cmds, c)
	}
	return cmds
}

func TestReadStatSelf(t *testing.T) {
	st, err := ReadStat(os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, os.Getpid(), st.Pid)
	assert.Equal(t, os.Getppid(), st.PPid)
	assert.Equal(t, unix.Getpgrp(), st.Pgrp)
	sid, err := unix.Getsid(0)
	require.NoError(t, err)
	assert.Equal(t, sid, st.Session)
	comm, err := os.ReadFile("/proc/self/comm")
	require.NoError(t, err)
	assert.Equal(t, strings.TrimSuffix(string(comm), "\n"), st.Comm)
	assert.Contains(t, "RS", string(st.State), "we are running or sleeping")
	assert.False(t, st.Zombie())
	assert.NotZero(t, st.StartTime)
}

func TestReadStatChild(t *testing.T) {
	c := startSleeps(t, 1)[0]
	st, err := ReadStat(c.Process.Pid)
	require.NoError(t, err)
	assert.Equal(t, "sleep", st.Comm)
	assert.Equal(t, os.Getpid(), st.PPid)
	self, err := ReadStat(os.Getpid())
	require.NoError(t, err)
	assert.GreaterOrEqual(t, st.StartTime, self.StartTime)
}

func TestReadStatMissing(t *testing.T) {
	for _, pid := range []int{0, -5, 1 << 30} {
		_, err := ReadStat(pid)
		require.Error(t, err)
		assert.True(t, IsNotExist(err), "pid %d: %v", pid, err)
		assert.Contains(t, err.Error(), "/proc/"+strconv.Itoa(pid)+"/stat")
	}
}

func TestReadAll(t *testing.T) {
	cmds := startSleeps(t, 3)
	stats, err := ReadAll()
	require.NoError(t, err)
	byPid := map[int]Stat{}
	for i, st := range stats {
		if i > 0 {
			assert.Less(t, stats[i-1].Pid, st.Pid, "ascending, no duplicates")
		}
		byPid[st.Pid] = st
	}
	assert.Contains(t, byPid, 1)
	assert.Contains(t, byPid, os.Getpid())
	for _, c := range cmds {
		st, ok := byPid[c.Process.Pid]
		require.True(t, ok)
		assert.Equal(t, os.Getpid(), st.PPid)
		one, err := ReadStat(c.Process.Pid)
		require.NoError(t, err)
		one.State = st.State // may flip between R and S from one read to the next
		assert.Equal(t, one, st, "ReadAll and ReadStat agree")
	}
}

func TestReadAllAllocations(t *testing.T) {
	stats, err := ReadAll()
	require.NoError(t, err)
	n := len(stats)
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := ReadAll(); err != nil {
			t.Fatal(err)
		}
	})
	// One Comm string per process; the rest is per scan (buffers, the
	// result's growth past 256, the /proc path).
	t.Logf("%d processes, %.0f allocations per ReadAll", n, allocs)
	assert.LessOrEqual(t, allocs, float64(n+16))
}

// TestReadAllWhileProcessesComeAndGo scans while children start and exit, so
// entries vanish between the directory listing and the stat read.
func TestReadAllWhileProcessesComeAndGo(t *testing.T) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = exec.Command("true").Run()
			}
		})
	}
	deadline := time.Now().Add(500 * time.Millisecond)
	scans := 0
	for time.Now().Before(deadline) {
		_, err := ReadAll()
		require.NoError(t, err)
		scans++
	}
	close(stop)
	wg.Wait()
	t.Logf("%d scans", scans)
}

func TestReadEnviron(t *testing.T) {
	c := exec.Command("sleep", "60")
	c.Env = []string{"SUBKIT_COOKIE=abc 123", "EMPTY=", "PATH=" + os.Getenv("PATH")}
	require.NoError(t, c.Start())
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })

	// A process fresh out of execve can read as empty for a moment.
	var env []string
	deadline := time.Now().Add(10 * time.Second)
	for len(env) == 0 && time.Now().Before(deadline) {
		var err error
		env, err = ReadEnviron(c.Process.Pid)
		require.NoError(t, err)
		time.Sleep(time.Millisecond)
	}
	assert.Equal(t, c.Env, env)

	_, err := ReadEnviron(1 << 30)
	assert.True(t, IsNotExist(err), "%v", err)
	_, err = ReadEnviron(0)
	assert.True(t, IsNotExist(err), "%v", err)
}

func TestReadEnvironZombieIsNotExist(t *testing.T) {
	c := exec.Command("sleep", "60")
	require.NoError(t, c.Start())
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	require.NoError(t, c.Process.Signal(syscall.SIGKILL))
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := ReadStat(c.Process.Pid)
		require.NoError(t, err)
		if st.Zombie() {
			break
		}
		require.True(t, time.Now().Before(deadline), "child never became a zombie")
		time.Sleep(5 * time.Millisecond)
	}
	_, err := ReadEnviron(c.Process.Pid)
	assert.True(t, IsNotExist(err), "a zombie has no environment left: %v", err)
}

func TestReadEnvironKernelThreadIsEmpty(t *testing.T) {
	st, err := ReadStat(2)
	if err != nil || st.Comm != "kthreadd" {
		t.Skip("no kthreadd at pid 2 (pid namespace)")
	}
	env, err := ReadEnviron(2)
	require.NoError(t, err)
	assert.Empty(t, env)
}

func TestDirentPid(t *testing.T) {
	rec := func(name string) []byte {
		b := make([]byte, direntNameOff+len(name)+1)
		binary.NativeEndian.PutUint16(b[direntReclenOff:], uint16(len(b)))
		copy(b[direntNameOff:], name)
		return b
	}
	for name, want := range map[string]int{"1": 1, "4194304": 4194304, "self": 0, "": 0, "12a": 0, "99999999999999": 0} {
		pid, n := direntPid(rec(name))
		assert.Equal(t, want, pid, "name %q", name)
		assert.Equal(t, len(rec(name)), n)
	}
	_, n := direntPid([]byte{1, 2, 3})
	assert.Equal(t, -1, n, "short record")
	bad := rec("1")
	binary.NativeEndian.PutUint16(bad[direntReclenOff:], 2)
	_, n = direntPid(bad)
	assert.Equal(t, -1, n, "reclen below header size")
	binary.NativeEndian.PutUint16(bad[direntReclenOff:], 500)
	_, n = direntPid(bad)
	assert.Equal(t, -1, n, "reclen past the buffer")
}

func TestReadAllMatchesProcListing(t *testing.T) {
	// Every process listed before and after a ReadAll must be in it.
	list := func() []int {
		ents, err := os.ReadDir(ProcRoot)
		require.NoError(t, err)
		var out []int
		for _, e := range ents {
			if pid, err := strconv.Atoi(e.Name()); err == nil {
				out = append(out, pid)
			}
		}
		return out
	}
	before := list()
	stats, err := ReadAll()
	require.NoError(t, err)
	after := list()
	got := make([]int, len(stats))
	for i, st := range stats {
		got[i] = st.Pid
	}
	for _, pid := range before {
		if slices.Contains(after, pid) {
			assert.Contains(t, got, pid)
		}
	}
}

func TestReaderGrowsBuffer(t *testing.T) {
	r := reader{buf: make([]byte, 8)}
	st, err := r.readStat(unix.AT_FDCWD, ProcRoot+"/", os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, os.Getpid(), st.Pid)
	assert.Equal(t, os.Getppid(), st.PPid)
	assert.Greater(t, len(r.buf), 8)
}
