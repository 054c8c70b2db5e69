//go:build darwin

package procinspect_test

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/procinspect"
)

func leftoverProcesses() []string {
	tab, err := procinspect.Snapshot(context.Background())
	if err != nil {
		return []string{"snapshot failed: " + err.Error()}
	}
	var left []string
	for _, p := range tab.Children(procinspect.Identity{Pid: os.Getpid()}) {
		left = append(left, p.Identity.String()+" "+p.Comm)
	}
	return left
}

func TestDarwinSnapshotSelfAndChild(t *testing.T) {
	ctx := context.Background()
	cmd := exec.Command("sleep", "30")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	tab, err := procinspect.Snapshot(ctx)
	require.NoError(t, err)
	self, ok := tab.Get(os.Getpid())
	require.True(t, ok)
	assert.Equal(t, os.Getppid(), self.PPid)
	assert.Equal(t, unix.Getpgrp(), self.Pgid)
	sid, err := unix.Getsid(0)
	require.NoError(t, err)
	assert.Equal(t, sid, self.Sid)

	child, ok := tab.Get(cmd.Process.Pid)
	require.True(t, ok)
	assert.Equal(t, os.Getpid(), child.PPid)
	assert.Equal(t, "sleep", child.Comm)
	assert.GreaterOrEqual(t, child.Start, self.Start)
	assert.Contains(t, tab.Descendants(self.Identity), child)

	alive, err := procinspect.Alive(ctx, child.Identity)
	require.NoError(t, err)
	assert.True(t, alive)
	alive, err = procinspect.Alive(ctx, procinspect.Identity{Pid: child.Pid, Start: child.Start + 1})
	require.NoError(t, err)
	assert.False(t, alive)

	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	alive, err = procinspect.Alive(ctx, child.Identity)
	require.NoError(t, err)
	assert.False(t, alive)
	_, err = procinspect.Lookup(ctx, child.Pid)
	assert.ErrorIs(t, err, procinspect.ErrNotFound)

	_, err = procinspect.Environ(ctx, os.Getpid())
	assert.ErrorIs(t, err, procinspect.ErrUnsupported)
}
