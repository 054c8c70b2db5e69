package subprocess_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/procinspect"
)

// hostedSleep runs the test binary as a host in mode, kills the host with SIGKILL and
// returns the identity of the sleep it had spawned.
func hostedSleep(t *testing.T, mode string) procinspect.Identity {
	mark := testutil.Mark()
	testutil.NoLeaks(t, mark)
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), hostModeVar+"="+mode, testutil.MarkVar+"="+mark, "TMPDIR="+t.TempDir())
	out, err := host.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, host.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "host said nothing")
	pid, err := strconv.Atoi(line[:len(line)-1])
	require.NoError(t, err, "host said %q", line)
	p, err := procinspect.Lookup(context.Background(), pid)
	require.NoError(t, err)
	require.NoError(t, host.Process.Signal(syscall.SIGKILL))
	host.Wait()
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return p.Identity
}

func TestKillOnHostExit(t *testing.T) {
	id := hostedSleep(t, "kill-on-host-exit")
	require.Eventually(t, func() bool {
		alive, err := procinspect.Alive(context.Background(), id)
		return err == nil && !alive
	}, 5*time.Second, 10*time.Millisecond, "the leader outlived its host")
}

func TestWithoutKillOnHostExitTheLeaderSurvives(t *testing.T) {
	id := hostedSleep(t, "plain")
	time.Sleep(200 * time.Millisecond) // long enough for a parent-death signal to have arrived
	alive, err := procinspect.Alive(context.Background(), id)
	require.NoError(t, err)
	assert.True(t, alive, "without the option nothing kills the orphaned leader")
	syscall.Kill(id.Pid, syscall.SIGKILL)
}
