package subprocess_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/subprocess"
)

// daemons leaves processes that escape the group every way bash allows.
const daemons = `setsid sleep 1001 &
(sleep 1002 &)
nohup sleep 1003 >/dev/null 2>&1 &
sleep 1004 & disown
setsid bash -c 'sleep 1005 & sleep 1006 &' &
echo ready; exec sleep 1000`

func TestTerminateEndsEscapedDaemons(t *testing.T) {
	svc, mark := newServiceMark(t, subprocess.Config{})
	spec := sh(daemons)
	spec.Grace = 500 * time.Millisecond
	h, err := svc.Spawn(context.Background(), spec)
	require.NoError(t, err)
	defer h.Close()
	waitFor(t, h, subprocess.Stdout, "ready")
	waitMarked(t, mark, 7)
	require.NoError(t, h.Terminate(ctxT(t, 20*time.Second)))
	assert.Empty(t, testutil.Marked(mark), "every process of the tree is gone after Terminate")
}

func TestCloseEndsEscapedDaemons(t *testing.T) {
	svc, mark := newServiceMark(t, subprocess.Config{})
	spec := sh(daemons + "\n")
	spec.Args[1] = `setsid sleep 1001 & setsid bash -c 'sleep 1005 &' & echo ready`
	h, err := svc.Spawn(context.Background(), spec)
	require.NoError(t, err)
	res, err := h.Wait(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode)
	waitMarked(t, mark, 2)
	require.NoError(t, svc.Close())
	assert.Empty(t, testutil.Marked(mark), "Close ends the processes that left the tree")
}

func waitMarked(t *testing.T, mark string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for len(testutil.Marked(mark)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d marked processes appeared, want %d", len(testutil.Marked(mark)), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestMembersListsSurvivors(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	spec := sh(`sleep 1000 & setsid sleep 1001 & echo ready`)
	spec.Stdout.Disposition = subprocess.Discard
	spec.Stderr.Disposition = subprocess.Discard
	h, err := svc.Spawn(context.Background(), spec)
	require.NoError(t, err)
	defer h.Close()
	_, err = h.Wait(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	var comms []string
	require.Eventually(t, func() bool {
		procs, err := h.Members(context.Background())
		require.NoError(t, err)
		comms = comms[:0]
		for _, p := range procs {
			comms = append(comms, p.Comm)
			assert.NotZero(t, p.Start)
		}
		// Until the forks have exec'd, a member may still be named bash or setsid.
		return slices.Equal(comms, []string{"sleep", "sleep"})
	}, 5*time.Second, 10*time.Millisecond, "members: %v", comms)
	require.NoError(t, h.Terminate(ctxT(t, 10*time.Second)))
	procs, err := h.Members(context.Background())
	require.NoError(t, err)
	assert.Empty(t, procs)
}

func TestTerminateAfterTheGroupIsGoneStillSweeps(t *testing.T) {
	svc, mark := newServiceMark(t, subprocess.Config{})
	spec := sh(`setsid sleep 1001 & echo ready`)
	spec.Stdout.Disposition = subprocess.Discard
	spec.Stderr.Disposition = subprocess.Discard
	h, err := svc.Spawn(context.Background(), spec)
	require.NoError(t, err)
	defer h.Close()
	require.NoError(t, h.WaitForExit(ctxT(t, 10*time.Second)), "the group is gone")
	waitMarked(t, mark, 1)
	require.NoError(t, h.Terminate(ctxT(t, 10*time.Second)))
	assert.Empty(t, testutil.Marked(mark), "the setsid daemon was found by the tree's cookie")
}
