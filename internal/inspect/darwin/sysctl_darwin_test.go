//go:build darwin

package darwin

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
	"unsafe"

	"github.com/shirou/gopsutil/v4/process"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestKinfoProcStructDecodes(t *testing.T) {
	kps := make([]unix.KinfoProc, 2)
	kps[0].Proc.P_pid = 4321
	kps[0].Proc.P_stat = StatSleep
	kps[0].Proc.P_flag = 0x4006
	kps[0].Proc.P_starttime = unix.Timeval{Sec: 1763116277, Usec: 654321}
	copy(kps[0].Proc.P_comm[:], "sleep")
	kps[0].Eproc.Ppid, kps[0].Eproc.Pgid = 4320, 4321
	kps[0].Eproc.Tdev, kps[0].Eproc.Tpgid = 16<<24|2, 4321
	kps[1].Proc.P_pid = 4322
	kps[1].Proc.P_stat = StatZombie
	kps[1].Eproc.Tdev = noDev
	b := unsafe.Slice((*byte)(unsafe.Pointer(&kps[0])), len(kps)*int(unsafe.Sizeof(kps[0])))
	recs, err := Decode(b)
	require.NoError(t, err)
	require.Len(t, recs, 2)
	assert.Equal(t, Record{Pid: 4321, PPid: 4320, Pgid: 4321, Sid: -1, Tpgid: 4321, Tty: 16<<24 | 2,
		Stat: StatSleep, Flag: 0x4006, Start: 1763116277_654321, Comm: "sleep"}, recs[0])
	assert.True(t, recs[1].Zombie())
	assert.Equal(t, uint64(0), recs[1].Tty)
}

func TestSnapshotFindsSelfAndChild(t *testing.T) {
	ctx := context.Background()
	cmd := exec.Command("sleep", "30")
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	recs, err := Snapshot(ctx)
	require.NoError(t, err)
	self, err := Pick(recs, os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, os.Getppid(), self.PPid)
	assert.Equal(t, unix.Getpgrp(), self.Pgid)
	sid, err := unix.Getsid(0)
	require.NoError(t, err)
	assert.Equal(t, sid, self.Sid)
	assert.InDelta(t, time.Now().UnixMicro(), int64(self.Start), float64(time.Hour/time.Microsecond), "started within the hour")

	child, err := Pick(recs, cmd.Process.Pid)
	require.NoError(t, err)
	assert.Equal(t, os.Getpid(), child.PPid)
	assert.GreaterOrEqual(t, child.Start, self.Start)
	assert.Equal(t, "sleep", child.Comm)

	one, err := Lookup(ctx, os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, self.Start, one.Start)
	assert.Equal(t, self.Sid, one.Sid)

	alive, err := Alive(ctx, child.Pid, child.Start)
	require.NoError(t, err)
	assert.True(t, alive)
	alive, err = Alive(ctx, child.Pid, child.Start+1)
	require.NoError(t, err)
	assert.False(t, alive, "one microsecond off is another process")

	// gopsutil, the test oracle, reads the same field (in milliseconds).
	p, err := process.NewProcess(int32(os.Getpid()))
	require.NoError(t, err)
	ms, err := p.CreateTime()
	require.NoError(t, err)
	assert.Equal(t, ms, int64(self.Start/1000))

	require.NoError(t, cmd.Process.Kill())
	require.Eventually(t, func() bool {
		r, err := Lookup(ctx, child.Pid)
		return err == nil && r.Zombie()
	}, 5*time.Second, time.Millisecond, "the killed child is a zombie until reaped")
	alive, err = Alive(ctx, child.Pid, child.Start)
	require.NoError(t, err)
	assert.False(t, alive, "a zombie is not alive")
	_ = cmd.Wait()
	_, err = Lookup(ctx, child.Pid)
	assert.ErrorIs(t, err, ErrNotFound)
}

func TestLookupMissing(t *testing.T) {
	_, err := Lookup(context.Background(), 99999999)
	assert.ErrorIs(t, err, ErrNotFound)
	alive, err := Alive(context.Background(), 99999999, 1)
	assert.NoError(t, err)
	assert.False(t, alive)
	_, err = Lookup(context.Background(), -1)
	assert.ErrorIs(t, err, ErrNotFound)
}

func TestCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Snapshot(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	_, err = Lookup(ctx, os.Getpid())
	assert.ErrorIs(t, err, context.Canceled)
}
