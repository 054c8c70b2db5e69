package posix_test

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/subkit/subkit/internal/ending"
	"github.com/subkit/subkit/internal/posix"
	"github.com/subkit/subkit/procinspect"
)

func TestMain(m *testing.M) {
	lifecycleActorMode() // returns unless this process was started as an actor
	goleak.VerifyTestMain(m)
}

func start(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.SysProcAttr = posix.SysProcAttr()
	cmd.Env = append(os.Environ(), env...)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	return cmd
}

// startTree starts args as the leader of a group of its own, watched by a Tree, and returns
// the leader's pid (cmd.Process is the Tree's from then on).
func startTree(t *testing.T, args ...string) (*posix.Tree, int) {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.SysProcAttr = posix.SysProcAttr()
	require.NoError(t, cmd.Start())
	pid := cmd.Process.Pid
	tr := posix.NewTree(pid, posix.WatchChild(cmd), nil, new(posix.Table))
	t.Cleanup(func() {
		tr.Signal(syscall.SIGKILL)
		<-tr.Gone()
	})
	return tr, pid
}

func within(t *testing.T, ch <-chan struct{}, d time.Duration, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(d):
		t.Fatalf("%s: not within %v", what, d)
	}
}

func TestTreeSignalAliveAndLatch(t *testing.T) {
	tr, pid := startTree(t, "bash", "-c", "sleep 1000 & sleep 1000 & wait")
	assert.Equal(t, pid, tr.Pgid())
	assert.True(t, tr.Alive())
	require.NoError(t, tr.Signal(syscall.SIGKILL))
	within(t, tr.Gone(), 5*time.Second, "group gone after SIGKILL")
	assert.False(t, tr.Alive())
	e, err := tr.Exit()
	require.NoError(t, err)
	e.Usage = posix.Usage{}
	assert.Equal(t, posix.Exit{Code: -1, Signal: syscall.SIGKILL}, e)
	// Once seen empty, the group is never signalled again, and that is not an error.
	require.NoError(t, tr.Signal(syscall.SIGTERM))
}

// The leader's exit is known at once, its status read without reaping it; it stays a zombie,
// holding its pid and the group number, until the last member of its group has exited.
func TestTreeHoldsTheLeaderUntilTheGroupIsEmpty(t *testing.T) {
	tr, pid := startTree(t, "bash", "-c", "sleep 0.5 & exit 3")
	within(t, tr.Exited(), 5*time.Second, "leader exit")
	e, err := tr.Exit()
	require.NoError(t, err)
	assert.Positive(t, e.Usage.MaxRSS, "the wait status's resource usage")
	e.Usage = posix.Usage{}
	assert.Equal(t, posix.Exit{Code: 3}, e)
	p, err := procinspect.Lookup(context.Background(), pid)
	require.NoError(t, err, "the leader is held while its group has a live member")
	assert.True(t, p.Zombie)
	assert.True(t, tr.Alive())
	within(t, tr.Gone(), 5*time.Second, "group gone once the sleep exits")
	require.NoError(t, tr.ReapErr())
	_, err = procinspect.Lookup(context.Background(), pid)
	assert.ErrorIs(t, err, procinspect.ErrNotFound, "the leader is reaped once its group is empty")
}

// A member that cleared its environment is still reached by the group signal after the
// leader has exited: the held leader keeps the group number the tree's.
func TestTreeSignalsAMemberWithAClearedEnvironment(t *testing.T) {
	tr, _ := startTree(t, "bash", "-c", "env -i sleep 300 & echo $! ; exit 0")
	within(t, tr.Exited(), 5*time.Second, "leader exit")
	assert.True(t, tr.Alive())
	members, err := tr.Members(context.Background())
	require.NoError(t, err)
	require.Len(t, members, 1)
	require.NoError(t, tr.Signal(syscall.SIGTERM))
	within(t, tr.Gone(), 5*time.Second, "group gone after SIGTERM")
	alive, err := procinspect.Alive(context.Background(), members[0].Identity)
	require.NoError(t, err)
	assert.False(t, alive)
}

func TestSignalIdentityIsFenced(t *testing.T) {
	cmd := start(t, nil, "sleep", "1000")
	ctx := context.Background()
	p, err := procinspect.Lookup(ctx, cmd.Process.Pid)
	require.NoError(t, err)

	wrong := p.Identity
	wrong.Start++
	sent, err := posix.SignalIdentity(ctx, wrong, syscall.SIGKILL)
	require.NoError(t, err)
	assert.False(t, sent, "a pid whose start differs is not signalled")
	alive, err := procinspect.Alive(ctx, p.Identity)
	require.NoError(t, err)
	assert.True(t, alive)

	sent, err = posix.SignalIdentity(ctx, p.Identity, syscall.SIGKILL)
	require.NoError(t, err)
	assert.True(t, sent)
	cmd.Wait()
	sent, err = posix.SignalIdentity(ctx, p.Identity, syscall.SIGKILL)
	require.NoError(t, err)
	assert.False(t, sent, "a reaped process is not signalled")
}

func TestCookieFindsEscapedProcesses(t *testing.T) {
	c := posix.NewCookie()
	cmd := start(t, []string{c.Env()}, "bash", "-c", "setsid sleep 1000 & echo $! ; wait")
	other := start(t, nil, "sleep", "1000") // no cookie
	ctx := context.Background()
	var found []procinspect.Identity
	require.Eventually(t, func() bool {
		var err error
		found, err = c.Find(ctx, cmd.Process.Pid)
		require.NoError(t, err)
		return len(found) == 1
	}, 5*time.Second, 10*time.Millisecond)
	p, err := procinspect.Lookup(ctx, found[0].Pid)
	require.NoError(t, err)
	assert.NotEqual(t, cmd.Process.Pid, p.Pgid, "it left the group")
	assert.NotEqual(t, other.Process.Pid, p.Pid)

	require.NoError(t, posix.SweepCookie(ctx, c, ending.Policy{Grace: time.Second}))
	alive, err := procinspect.Alive(ctx, found[0])
	require.NoError(t, err)
	assert.False(t, alive)
	assert.Nil(t, posix.CookieFromEnv("PATH=/bin"))
	assert.NotNil(t, posix.CookieFromEnv(c.Env()))
}

func TestCookieStartFence(t *testing.T) {
	c := posix.NewCookie()
	name, value, _ := strings.Cut(c.Env(), "=")
	since, err := strconv.ParseUint(value, 10, 64)
	require.NoError(t, err)
	require.NotZero(t, since)
	cmd := start(t, []string{c.Env()}, "sleep", "1000")
	ctx := context.Background()
	p, err := procinspect.Lookup(ctx, cmd.Process.Pid)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, p.Start, since, "a process started after the cookie is not older than it")
	var found []procinspect.Identity
	require.Eventually(t, func() bool {
		found, err = c.Find(ctx, 0)
		return err == nil && len(found) == 1
	}, 5*time.Second, 10*time.Millisecond)
	// The same name with a start token after the process: it is too old to match.
	later := posix.CookieFromEnv(name + "=" + strconv.FormatUint(p.Start+1, 10))
	found, err = later.Find(ctx, 0)
	require.NoError(t, err)
	assert.Empty(t, found)
}

// Members that exit leave zombies that init reaps; a group of zombies has no live member.
func TestTreeOfZombiesIsGone(t *testing.T) {
	tr, _ := startTree(t, "bash", "-c", "true & true & exit 0")
	within(t, tr.Gone(), 5*time.Second, "group of zombies gone")
	require.NoError(t, tr.Signal(syscall.SIGTERM), "signalling a gone tree is harmless")
}
