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

	"github.com/subkit/subkit/procinspect"
	"github.com/subkit/subkit/subprocess/posix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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

func TestGroupSignalAliveAndLatch(t *testing.T) {
	cmd := start(t, nil, "bash", "-c", "sleep 1000 & sleep 1000 & wait")
	g := posix.NewGroup(cmd.Process)
	assert.Equal(t, cmd.Process.Pid, g.Pgid())
	assert.True(t, g.Alive())
	require.NoError(t, g.Signal(syscall.SIGKILL))
	cmd.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, g.WaitGone(ctx))
	assert.False(t, g.Alive())
	// Once seen empty, the group is never signalled again, and that is not an error.
	require.NoError(t, g.Signal(syscall.SIGTERM))
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

	require.NoError(t, posix.SweepCookie(ctx, c, time.Second))
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

func TestGroupOfZombiesIsNotAlive(t *testing.T) {
	cmd := start(t, nil, "true")
	g := posix.NewGroup(cmd.Process)
	// Not reaped yet: the only member is a zombie.
	require.Eventually(t, func() bool {
		p, err := procinspect.Lookup(context.Background(), cmd.Process.Pid)
		return err == nil && p.Zombie
	}, 5*time.Second, time.Millisecond)
	require.NoError(t, syscall.Kill(-cmd.Process.Pid, 0), "the zombie still holds the group")
	assert.False(t, g.Alive())
	require.NoError(t, g.Signal(syscall.SIGTERM), "signalling a zombie group is harmless")
}
