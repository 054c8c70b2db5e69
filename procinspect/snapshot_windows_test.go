//go:build windows

package procinspect_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	xwin "golang.org/x/sys/windows"

	"github.com/subkit/subkit/internal/proctest"
	"github.com/subkit/subkit/procinspect"
)

// leftoverProcesses lists the live descendants of this test binary.
func leftoverProcesses() []string {
	ctx := context.Background()
	self, err := procinspect.Lookup(ctx, os.Getpid())
	if err != nil {
		return []string{"lookup of self failed: " + err.Error()}
	}
	tab, err := procinspect.Snapshot(ctx)
	if err != nil {
		return []string{"snapshot failed: " + err.Error()}
	}
	var left []string
	for _, p := range tab.Descendants(self.Identity) {
		if !p.Zombie {
			left = append(left, p.Identity.String()+" "+p.Comm)
		}
	}
	return left
}

// wineVersion is the version of Wine this test binary runs under ("8.0"), or "" on Windows.
// Wine's ntdll exports wine_get_version; Windows' does not.
func wineVersion() string {
	proc := xwin.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version")
	if proc.Find() != nil {
		return ""
	}
	r, _, _ := proc.Call() // a C string in ntdll's data
	if v := xwin.BytePtrToString((*byte)(unsafe.Add(nil, r))); v != "" {
		return v
	}
	return "unknown"
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

// A tree of real processes with children, grandchildren and a cmd.exe in between: each
// process is in the snapshot with its pid, parent, name and a creation time, stable across
// snapshots and equal to what Lookup reads; Descendants of the root finds exactly the
// tree, each process after its parent; Alive checks identities; once the tree has ended no
// identity of it is alive.
func TestWindowsTree(t *testing.T) {
	ctx := context.Background()
	// root -> 2 nodes -> cmd.exe each -> a node each -> a leaf each: 9 processes.
	tr := proctest.Start(t, "2,c1,1")
	require.Len(t, tr.Procs, 9)

	tab := snapshot(t)
	root := mustGet(t, tab, tr.Root)
	for pid, want := range tr.Procs {
		p := mustGet(t, tab, pid)
		assert.Equal(t, want.PPid, p.PPid, "parent of %d", pid)
		assert.True(t, strings.EqualFold(want.Name, p.Comm), "name of %d: %q, want %q", pid, p.Comm, want.Name)
		assert.NotZero(t, p.Start, "start of %d", pid)
		assert.False(t, p.Zombie)
		assert.Zero(t, p.Pgid)
		assert.Zero(t, p.Sid)
		if pid != tr.Root {
			parent := mustGet(t, tab, want.PPid)
			assert.GreaterOrEqual(t, p.Start, parent.Start, "%d started before its parent %d", pid, want.PPid)
		}
	}

	desc := tab.Descendants(root.Identity)
	var want []int
	for pid := range tr.Procs {
		if pid != tr.Root {
			want = append(want, pid)
		}
	}
	assert.ElementsMatch(t, want, pids(desc))
	seen := map[int]bool{tr.Root: true}
	for _, p := range desc {
		assert.True(t, seen[p.PPid], "%d comes before its parent %d", p.Pid, p.PPid)
		seen[p.Pid] = true
	}
	var children []int
	for pid, r := range tr.Procs {
		if r.PPid == tr.Root {
			children = append(children, pid)
		}
	}
	slices.Sort(children)
	assert.Equal(t, children, pids(tab.Children(root.Identity)))
	assert.Nil(t, tab.Descendants(procinspect.Identity{Pid: root.Pid, Start: root.Start + 1}), "a wrong start names no root")

	// The start token is the creation time: a second snapshot and Lookup read the same.
	again := snapshot(t)
	for pid := range tr.Procs {
		p := mustGet(t, tab, pid)
		assert.Equal(t, p, mustGet(t, again, pid))
		one, err := procinspect.Lookup(ctx, pid)
		require.NoError(t, err)
		assert.Equal(t, p, one)
		alive, err := procinspect.Alive(ctx, p.Identity)
		require.NoError(t, err)
		assert.True(t, alive, "%s", p.Identity)
		for _, other := range []uint64{p.Start - 1, p.Start + 1, 0} {
			alive, err = procinspect.Alive(ctx, procinspect.Identity{Pid: pid, Start: other})
			require.NoError(t, err)
			assert.False(t, alive, "%d with start %d", pid, other)
		}
	}

	tr.Stop(t)
	for pid := range tr.Procs {
		p := mustGet(t, tab, pid)
		alive, err := procinspect.Alive(ctx, p.Identity)
		require.NoError(t, err)
		assert.False(t, alive, "%s after the tree ended", p.Identity)
	}
	assert.Empty(t, snapshot(t).Descendants(root.Identity))
}

// This process as Lookup reads it: its creation time is what GetProcessTimes gives for it,
// its parent what os.Getppid says, its name the test binary's.
func TestWindowsSelf(t *testing.T) {
	ctx := context.Background()
	self, err := procinspect.Lookup(ctx, os.Getpid())
	require.NoError(t, err)
	var created, exited, kernel, user xwin.Filetime
	require.NoError(t, xwin.GetProcessTimes(xwin.CurrentProcess(), &created, &exited, &kernel, &user))
	assert.Equal(t, uint64(created.HighDateTime)<<32|uint64(created.LowDateTime), self.Start)
	assert.Equal(t, os.Getppid(), self.PPid)
	exe, err := os.Executable()
	require.NoError(t, err)
	assert.True(t, strings.EqualFold(filepath.Base(exe), self.Comm), "%q", self.Comm)
	assert.Equal(t, procinspect.Proc{Identity: self.Identity, PPid: self.PPid, Comm: self.Comm}, self,
		"no group, session or terminal on Windows")
	alive, err := procinspect.Alive(ctx, self.Identity)
	require.NoError(t, err)
	assert.True(t, alive)
}

// A process that exited while a handle still holds its object is not alive; the snapshot
// leaves it out (Wine 8.0) or lists it as a zombie (Windows).
func TestWindowsExitedButHeld(t *testing.T) {
	ctx := context.Background()
	tr := proctest.Start(t, "")
	p, err := procinspect.Lookup(ctx, tr.Root)
	require.NoError(t, err)
	h, err := xwin.OpenProcess(xwin.PROCESS_QUERY_LIMITED_INFORMATION|xwin.SYNCHRONIZE, false, uint32(tr.Root))
	require.NoError(t, err)
	defer xwin.CloseHandle(h)
	tr.Stop(t)

	alive, err := procinspect.Alive(ctx, p.Identity)
	require.NoError(t, err)
	assert.False(t, alive)
	if z, ok := snapshot(t).Get(tr.Root); ok {
		assert.True(t, z.Zombie, "%+v", z)
		assert.Equal(t, p.Start, z.Start)
	}
	if z, err := procinspect.Lookup(ctx, tr.Root); err == nil {
		assert.True(t, z.Zombie, "%+v", z)
	} else {
		assert.ErrorIs(t, err, procinspect.ErrNotFound)
	}
}

func TestWindowsNotFound(t *testing.T) {
	ctx := context.Background()
	const none = 1<<30 + 4
	_, err := procinspect.Lookup(ctx, none)
	assert.ErrorIs(t, err, procinspect.ErrNotFound)
	for _, pid := range []int{none, -4, 0} {
		alive, err := procinspect.Alive(ctx, procinspect.Identity{Pid: pid, Start: 1})
		assert.NoError(t, err, "pid %d", pid)
		assert.False(t, alive, "pid %d", pid)
	}
	_, err = procinspect.Environ(ctx, os.Getpid())
	assert.ErrorIs(t, err, procinspect.ErrUnsupported)

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = procinspect.Snapshot(cancelled)
	assert.ErrorIs(t, err, context.Canceled)
	_, err = procinspect.Lookup(cancelled, os.Getpid())
	assert.ErrorIs(t, err, context.Canceled)
	_, err = procinspect.Alive(cancelled, procinspect.Identity{Pid: os.Getpid()})
	assert.ErrorIs(t, err, context.Canceled)
}

// A process this user cannot open keeps Start 0, and its identity cannot be checked.
func TestWindowsUnopenable(t *testing.T) {
	ctx := context.Background()
	var locked []procinspect.Proc
	for _, p := range snapshot(t).Procs() {
		if p.Start == 0 && p.Pid != 0 {
			locked = append(locked, p)
		}
	}
	if len(locked) == 0 {
		if v := wineVersion(); v != "" {
			t.Skipf("Wine %s: every process can be opened with PROCESS_QUERY_LIMITED_INFORMATION (no protected processes, one user), so none keeps Start 0; runs on Windows only", v)
		}
		t.Skip("every process could be opened (an elevated test run): none keeps Start 0")
	}
	for _, p := range locked {
		alive, err := procinspect.Alive(ctx, p.Identity)
		assert.False(t, alive, "%+v", p)
		if err != nil {
			assert.ErrorIs(t, err, fs.ErrPermission, "%+v", p)
		}
	}
}
