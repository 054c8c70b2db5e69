//go:build darwin

package darwin

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestSnapshotFindsSelf(t *testing.T) {
	ctx := context.Background()
	recs, err := Snapshot(ctx)
	require.NoError(t, err)
	var self *Record
	for i := range recs {
		if recs[i].Pid == os.Getpid() {
			self = &recs[i]
		}
	}
	require.NotNil(t, self, "own pid in the ps snapshot")
	assert.Equal(t, os.Getppid(), self.PPid)
	assert.Equal(t, unix.Getpgrp(), self.Pgid)
	sid, err := unix.Getsid(0)
	require.NoError(t, err)
	assert.Equal(t, sid, self.Sid)
	assert.InDelta(t, time.Now().Unix(), int64(self.Start), 3600, "started within the hour")

	one, err := Lookup(ctx, os.Getpid())
	require.NoError(t, err)
	assert.Equal(t, self.Start, one.Start)
	assert.Equal(t, self.PPid, one.PPid)
}

func TestLookupMissing(t *testing.T) {
	_, err := Lookup(context.Background(), 99999999)
	assert.ErrorIs(t, err, ErrNotFound)
}

func TestSnapshotCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Snapshot(ctx)
	assert.ErrorIs(t, err, context.Canceled)
}
