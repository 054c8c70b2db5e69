//go:build linux

package procinspect_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/shirou/gopsutil/v4/process"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/internal/inspect/linux"
	"github.com/subkit/subkit/procinspect"
)

// cookieName marks every process these tests start, so TestMain can prove
// none survived (Environ finds them even after re-parenting).
const cookieName = "SUBKIT_PROCINSPECT_TEST"

func cookie() string { return cookieName + "=" + strconv.Itoa(os.Getpid()) }

// leftoverProcesses lists processes started by this test binary that still
// exist: unreaped children, and anything carrying the cookie.
func leftoverProcesses() []string {
	tab, err := procinspect.Snapshot(context.Background())
	if err != nil {
		return []string{"snapshot failed: " + err.Error()}
	}
	var left []string
	for _, p := range tab.Procs() {
		if p.Pid == os.Getpid() {
			continue
		}
		if p.PPid == os.Getpid() {
			left = append(left, p.Identity.String()+" "+p.Comm+" (child)")
			continue
		}
		env, err := procinspect.Environ(context.Background(), p.Pid)
		if err == nil && slices.Contains(env, cookie()) {
			left = append(left, p.Identity.String()+" "+p.Comm+" (cookie)")
		}
	}
	return left
}

// start starts cmd with the cookie in its environment and registers a
// cleanup that kills its whole tree leaves first (so every process is reaped
// by its own parent, none orphaned) and then reaps cmd itself.
func start(t *testing.T, cmd *exec.Cmd) *exec.Cmd {
	t.Helper()
	cmd.Env = append(os.Environ(), cookie())
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { stopTree(t, cmd) })
	return cmd
}

func stopTree(t *testing.T, cmd *exec.Cmd) {
	ctx := context.Background()
	pid := cmd.Process.Pid
	if root, err := procinspect.Lookup(ctx, pid); err == nil {
		if tab, err := procinspect.Snapshot(ctx); err == nil {
			desc := tab.Descendants(root.Identity)
			for i := len(desc) - 1; i >= 0; i-- {
				_ = unix.Kill(desc[i].Pid, unix.SIGKILL)
			}
			// Give each parent (bash's wait) the chance to reap its own.
			deadline := time.Now().Add(5 * time.Second)
			for _, d := range desc {
				for time.Now().Before(deadline) {
					if _, err := procinspect.Lookup(ctx, d.Pid); errors.Is(err, procinspect.ErrNotFound) {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
		}
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func snapshot(t *testing.T) *procinspect.Table {
	t.Helper()
	tab, err := procinspect.Snapshot(context.Background())
	require.NoError(t, err)
	return tab
}

func mustGet(t *testing.T, tab *procinspect.Table, pid int) procinspect.Proc {
	t.Helper()
	p, ok := tab.Get(pid)
	require.True(t, ok, "pid %d not in snapshot", pid)
	return p
}

func TestSnapshotTreeSessionGroup(t *testing.T) {
	ctx := context.Background()
	plain := start(t, exec.Command("sleep", "30"))
	jobCmd := exec.Command("bash", "-c", "sleep 30 & sleep 30 & wait")
	jobCmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	job := start(t, jobCmd)
	jobPid := job.Process.Pid

	var tab *procinspect.Table
	waitFor(t, "bash to start both sleeps", func() bool {
		tab = snapshot(t)
		g := tab.Group(jobPid)
		// Forked children show comm "bash" until they exec sleep.
		return len(g) == 3 && g[1].Comm == "sleep" && g[2].Comm == "sleep"
	})

	self := mustGet(t, tab, os.Getpid())
	assert.Equal(t, os.Getppid(), self.PPid)
	assert.Equal(t, unix.Getpgrp(), self.Pgid)
	sid, err := unix.Getsid(0)
	require.NoError(t, err)
	assert.Equal(t, sid, self.Sid)

	p := mustGet(t, tab, plain.Process.Pid)
	assert.Equal(t, os.Getpid(), p.PPid)
	assert.Equal(t, self.Pgid, p.Pgid, "plain child stays in our group")
	assert.Equal(t, self.Sid, p.Sid)
	assert.Equal(t, "sleep", p.Comm)
	assert.GreaterOrEqual(t, p.Start, self.Start)

	j := mustGet(t, tab, jobPid)
	assert.Equal(t, os.Getpid(), j.PPid)
	assert.Equal(t, jobPid, j.Pgid, "Setpgid child leads its own group")
	assert.Equal(t, self.Sid, j.Sid)
	assert.Equal(t, "bash", j.Comm)

	children := pids(tab.Children(self.Identity))
	assert.Contains(t, children, plain.Process.Pid)
	assert.Contains(t, children, jobPid)

	sleeps := tab.Descendants(j.Identity)
	require.Len(t, sleeps, 2)
	for _, s := range sleeps {
		assert.Equal(t, jobPid, s.PPid)
		assert.Equal(t, jobPid, s.Pgid)
		assert.Equal(t, self.Sid, s.Sid)
		assert.Equal(t, "sleep", s.Comm)
		assert.GreaterOrEqual(t, s.Start, j.Start)
	}
	assert.ElementsMatch(t, pids(sleeps), pids(tab.Children(j.Identity)))
	assert.ElementsMatch(t, append([]int{jobPid}, pids(sleeps)...), pids(tab.Group(jobPid)))

	all := pids(tab.Descendants(self.Identity))
	for _, pid := range append([]int{plain.Process.Pid, jobPid}, pids(sleeps)...) {
		assert.Contains(t, all, pid)
	}
	session := pids(tab.Session(self.Sid))
	for _, pid := range append([]int{os.Getpid(), plain.Process.Pid, jobPid}, pids(sleeps)...) {
		assert.Contains(t, session, pid)
	}

	// A root whose start token is off by one tick names no process.
	assert.Nil(t, tab.Descendants(procinspect.Identity{Pid: jobPid, Start: j.Start + 1}))

	// Lookup agrees with the snapshot.
	got, err := procinspect.Lookup(ctx, jobPid)
	require.NoError(t, err)
	assert.Equal(t, j, got)
}

func TestSetsidChildHasNoTerminal(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	start(t, cmd)
	p, err := procinspect.Lookup(context.Background(), cmd.Process.Pid)
	require.NoError(t, err)
	assert.Equal(t, p.Pid, p.Sid, "session leader")
	assert.Equal(t, p.Pid, p.Pgid, "group leader")
	assert.Equal(t, uint64(0), p.Tty)
	assert.Equal(t, -1, p.Tpgid)

	gp, err := process.NewProcess(int32(p.Pid))
	require.NoError(t, err)
	term, err := gp.Terminal()
	require.NoError(t, err)
	assert.Empty(t, term, "gopsutil sees no terminal either")
}

func TestPtyChildTerminal(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.Env = append(os.Environ(), cookie())
	master, err := pty.Start(cmd) // Setsid + Setctty on the pty's slave
	require.NoError(t, err)
	t.Cleanup(func() {
		stopTree(t, cmd)
		_ = master.Close()
	})

	p, err := procinspect.Lookup(context.Background(), cmd.Process.Pid)
	require.NoError(t, err)
	require.NotZero(t, p.Tty, "child has a controlling terminal")
	assert.Equal(t, p.Pid, p.Tpgid, "child's group is the terminal's foreground group")
	assert.Equal(t, p.Pid, p.Sid)

	gp, err := process.NewProcess(int32(p.Pid))
	require.NoError(t, err)
	term, err := gp.Terminal()
	require.NoError(t, err)
	require.NotEmpty(t, term, "gopsutil names the terminal")
	var st unix.Stat_t
	require.NoError(t, unix.Stat("/dev/"+term, &st))
	assert.Equal(t, uint64(st.Rdev), p.Tty, "Tty is the terminal's st_rdev (%s)", term)
}

// bootTime reads btime (boot time in Unix seconds) from /proc/stat.
func bootTime(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/stat")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "btime "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("no btime in /proc/stat")
	return 0
}

// clockTicks is USER_HZ, the unit of starttime. The kernel fixes it at 100
// for user space on every architecture (sysconf(_SC_CLK_TCK) reports it).
const clockTicks = 100

func TestAgreesWithGopsutil(t *testing.T) {
	ctx := context.Background()
	plain := start(t, exec.Command("sleep", "30"))
	setsid := exec.Command("sleep", "30")
	setsid.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	start(t, setsid)

	tab := snapshot(t)
	btime := bootTime(t)
	for _, pid := range []int{1, os.Getpid(), plain.Process.Pid, setsid.Process.Pid} {
		p := mustGet(t, tab, pid)
		gp, err := process.NewProcessWithContext(ctx, int32(pid))
		require.NoError(t, err, "gopsutil pid %d", pid)

		ppid, err := gp.PpidWithContext(ctx)
		require.NoError(t, err)
		assert.Equal(t, int(ppid), p.PPid, "ppid of %d", pid)

		name, err := gp.NameWithContext(ctx)
		require.NoError(t, err)
		// gopsutil completes a comm cut at 15 bytes from the command line.
		assert.True(t, strings.HasPrefix(name, p.Comm), "comm of %d: gopsutil %q, ours %q", pid, name, p.Comm)

		created, err := gp.CreateTimeWithContext(ctx) // ms since the epoch, boot-time derived
		require.NoError(t, err)
		ours := btime*1000 + int64(p.Start)*1000/clockTicks
		assert.InDelta(t, created, ours, 2000, "start of %d: gopsutil %d ms, ours %d ms", pid, created, ours)

		term, err := gp.TerminalWithContext(ctx)
		require.NoError(t, err)
		if p.Tty == 0 {
			assert.Empty(t, term, "pid %d has no tty but gopsutil says %q", pid, term)
		} else if term != "" { // gopsutil only maps /dev/tty* and /dev/pts/*
			var st unix.Stat_t
			require.NoError(t, unix.Stat("/dev/"+term, &st))
			assert.Equal(t, uint64(st.Rdev), p.Tty, "tty of %d", pid)
		}
	}

	gpids, err := process.PidsWithContext(ctx)
	require.NoError(t, err)
	for _, pid := range []int{plain.Process.Pid, setsid.Process.Pid} {
		assert.Contains(t, gpids, int32(pid))
	}
}

func TestAlive(t *testing.T) {
	ctx := context.Background()
	cmd := start(t, exec.Command("sleep", "30"))
	p, err := procinspect.Lookup(ctx, cmd.Process.Pid)
	require.NoError(t, err)

	alive, err := procinspect.Alive(ctx, p.Identity)
	require.NoError(t, err)
	assert.True(t, alive, "live child with its identity")

	for _, start := range []uint64{p.Start + 1, p.Start - 1, 0} {
		alive, err = procinspect.Alive(ctx, procinspect.Identity{Pid: p.Pid, Start: start})
		require.NoError(t, err)
		assert.False(t, alive, "right pid, wrong start %d", start)
	}

	// Killed but not reaped: a zombie, still listed, not alive.
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	waitFor(t, "the child to become a zombie", func() bool {
		st, err := linux.ReadStat(p.Pid)
		require.NoError(t, err)
		return st.State == 'Z'
	})
	alive, err = procinspect.Alive(ctx, p.Identity)
	require.NoError(t, err)
	assert.False(t, alive, "zombie")
	z, err := procinspect.Lookup(ctx, p.Pid)
	require.NoError(t, err, "Lookup still returns the zombie")
	assert.Equal(t, p.Identity, z.Identity)

	// Reaped: gone.
	_ = cmd.Wait()
	alive, err = procinspect.Alive(ctx, p.Identity)
	require.NoError(t, err)
	assert.False(t, alive, "reaped")
	_, err = procinspect.Lookup(ctx, p.Pid)
	assert.ErrorIs(t, err, procinspect.ErrNotFound)
}

func TestAliveSelf(t *testing.T) {
	ctx := context.Background()
	self, err := procinspect.Lookup(ctx, os.Getpid())
	require.NoError(t, err)
	alive, err := procinspect.Alive(ctx, self.Identity)
	require.NoError(t, err)
	assert.True(t, alive)
}

func TestLookupNotFound(t *testing.T) {
	ctx := context.Background()
	for _, pid := range []int{-1, 0, 1 << 30} {
		_, err := procinspect.Lookup(ctx, pid)
		require.ErrorIs(t, err, procinspect.ErrNotFound, "pid %d", pid)
		assert.Contains(t, err.Error(), "procinspect: lookup pid "+strconv.Itoa(pid))
		alive, err := procinspect.Alive(ctx, procinspect.Identity{Pid: pid})
		require.NoError(t, err)
		assert.False(t, alive)
	}
	_, err := procinspect.Lookup(ctx, 1<<30)
	assert.Contains(t, err.Error(), "/proc/1073741824/stat")
}

func TestEnviron(t *testing.T) {
	ctx := context.Background()
	cmd := exec.Command("sleep", "30")
	start(t, cmd) // start adds the cookie
	// Right after execve the kernel may not have set up the new environment
	// yet (the exec has been reported before the stack is built), so a
	// brand-new process can briefly read as empty.
	var env []string
	waitFor(t, "the child's environment", func() bool {
		var err error
		env, err = procinspect.Environ(ctx, cmd.Process.Pid)
		require.NoError(t, err)
		return len(env) > 0
	})
	assert.Contains(t, env, cookie())
	for _, kv := range env {
		assert.NotContains(t, kv, "\x00")
	}

	_, err := procinspect.Environ(ctx, 1<<30)
	assert.ErrorIs(t, err, procinspect.ErrNotFound)
}

func TestCanceledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := procinspect.Snapshot(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	_, err = procinspect.Lookup(ctx, os.Getpid())
	assert.ErrorIs(t, err, context.Canceled)
	_, err = procinspect.Alive(ctx, procinspect.Identity{Pid: os.Getpid()})
	assert.ErrorIs(t, err, context.Canceled)
	_, err = procinspect.Environ(ctx, os.Getpid())
	assert.ErrorIs(t, err, context.Canceled)
}
