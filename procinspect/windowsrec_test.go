package procinspect

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/inspect/win"
)

func TestFromWindows(t *testing.T) {
	r := win.Record{Pid: 1204, PPid: 600, Threads: 3, Start: 134_406_447_075_290_960, Comm: "cmd.exe"}
	assert.Equal(t, Proc{Identity: Identity{Pid: 1204, Start: 134_406_447_075_290_960}, PPid: 600, Comm: "cmd.exe"},
		fromWindows(&r))
	r.Threads = 0
	assert.True(t, fromWindows(&r).Zombie)
}

// Windows never re-parents: a process keeps its creator's pid after the creator exits, and
// that pid may name a newer process by the time of the snapshot. The start fence leaves
// such stale links out, and a process that could not be opened (Start 0) is never a child of
// one that could.
func TestTableFromWindowsFences(t *testing.T) {
	const s = 134_406_447_000_000_000
	recs := []win.Record{
		{Pid: 0, Threads: 4, Comm: "[System Process]", StartErr: win.ErrNoObject},
		{Pid: 4, Threads: 100, Comm: "System", StartErr: errors.New("Access is denied.")},
		{Pid: 600, PPid: 500, Threads: 3, Start: s + 100, Comm: "shell.exe"},
		{Pid: 604, PPid: 600, Threads: 1, Start: s + 99, Comm: "old.exe"}, // created by an earlier 600
		{Pid: 608, PPid: 600, Threads: 1, Start: s + 101, Comm: "cmd.exe"},
		{Pid: 612, PPid: 608, Threads: 1, Start: s + 200, Comm: "tool.exe"},
		{Pid: 616, PPid: 608, Threads: 2, Comm: "protected.exe"}, // Start 0: could not be opened
		{Pid: 620, PPid: 612, Threads: 0, Start: s + 300, Comm: "exited.exe"},
	}
	tab, err := tableFromWindows(recs, nil)
	require.NoError(t, err)
	shell, ok := tab.Get(600)
	require.True(t, ok)
	var got []int
	for _, p := range tab.Descendants(shell.Identity) {
		got = append(got, p.Pid)
	}
	assert.Equal(t, []int{608, 612, 620}, got)
	z, _ := tab.Get(620)
	assert.True(t, z.Zombie)
	idle, _ := tab.Get(0)
	assert.False(t, idle.Zombie)
	assert.Empty(t, tab.Descendants(Identity{Pid: 600, Start: s + 101}), "a wrong start names no root")

	boom := errors.New("boom")
	_, err = tableFromWindows(nil, boom)
	assert.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), "procinspect: snapshot")
}

func TestLookupFromWindows(t *testing.T) {
	_, err := lookupFromWindows(42, win.Record{}, fmt.Errorf("pid 42: %w", win.ErrNotFound))
	assert.ErrorIs(t, err, ErrNotFound)
	assert.ErrorIs(t, err, win.ErrNotFound)

	boom := errors.New("CreateToolhelp32Snapshot: boom")
	_, err = lookupFromWindows(42, win.Record{}, boom)
	assert.ErrorIs(t, err, boom)
	assert.NotErrorIs(t, err, ErrNotFound)

	p, err := lookupFromWindows(42, win.Record{Pid: 42, PPid: 8, Threads: 1, Start: 7, Comm: "a.exe"}, nil)
	require.NoError(t, err)
	assert.Equal(t, Proc{Identity: Identity{Pid: 42, Start: 7}, PPid: 8, Comm: "a.exe"}, p)
}

func TestAliveFromWindows(t *testing.T) {
	ok, err := aliveFromWindows(Identity{Pid: 42, Start: 7}, true, nil)
	assert.True(t, ok)
	assert.NoError(t, err)
	boom := errors.New("Access is denied.")
	ok, err = aliveFromWindows(Identity{Pid: 42, Start: 7}, true, boom)
	assert.False(t, ok)
	assert.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), "42@7")
}
