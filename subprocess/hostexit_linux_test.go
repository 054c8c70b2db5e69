package subprocess_test

import (
	"bufio"
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

	"github.com/subkit/subkit/internal/posix"
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
	require.NoError(t, posix.AwaitExit(ctxT(t, 30*time.Second), id), "the leader outlived its host")
}

func TestWithoutKillOnHostExitTheLeaderSurvives(t *testing.T) {
	id := hostedSleep(t, "plain")
	// The host has been reaped: a parent-death signal, had one been asked for, was sent when
	// the host exited, and is pending or has ended the leader by now.
	alive, err := procinspect.Alive(context.Background(), id)
	require.NoError(t, err)
	assert.True(t, alive, "without the option nothing kills the orphaned leader")
	assert.Empty(t, pendingSignals(t, id.Pid), "without the option no signal is on its way to the orphaned leader")
	syscall.Kill(id.Pid, syscall.SIGKILL)
}

// pendingSignals lists the non-zero pending-signal masks of pid (its threads' and its
// process's), from /proc/<pid>/status.
func pendingSignals(t *testing.T, pid int) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	require.NoError(t, err)
	var pending []string
	for _, line := range strings.Split(string(b), "\n") {
		name, mask, ok := strings.Cut(line, ":")
		if ok && (name == "SigPnd" || name == "ShdPnd") && strings.Trim(strings.TrimSpace(mask), "0") != "" {
			pending = append(pending, line)
		}
	}
	return pending
}
