package subprocess_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/procinspect"
	"github.com/subkit/subkit/subprocess"
)

func TestGuardedSpawn(t *testing.T) {
	svc := newService(t, subprocess.Config{Guard: true})
	res := run(t, svc, sh(`echo out; echo err >&2; exit 3`))
	assert.Equal(t, 3, res.ExitCode)
	assert.Equal(t, "out\n", string(res.Stdout.Tail))
	assert.Equal(t, "err\n", string(res.Stderr.Tail))

	h, err := svc.Spawn(context.Background(), sh(`exec sleep 1000`))
	require.NoError(t, err)
	p, err := procinspect.Lookup(context.Background(), h.Pid())
	require.NoError(t, err)
	assert.Equal(t, h.Pid(), p.Pgid, "the pid is the program's, leading its group")
	require.NoError(t, h.Terminate(ctxT(t, 10*time.Second)))
	res, err = h.Wait(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, "SIGTERM", res.Signal)
	require.NoError(t, h.Close())
}

func TestGuardNeedsAHelper(t *testing.T) {
	_, err := subprocess.New(subprocess.Config{Guard: true, Helper: "/no/such/helper"})
	assert.ErrorIs(t, err, subprocess.ErrNotFound)
	assert.True(t, strings.Contains(err.Error(), "Config.Helper"), err.Error())
}
