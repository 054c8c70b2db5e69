//go:build windows

package windows

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	xwin "golang.org/x/sys/windows"
)

// These run only on a Windows machine (none in CI): they bind the routes to the real calls.

// startTree starts the helper in mode "tree" suspended in a group of its own, attaches it, and
// returns the tree, the grandchild's pid, and a channel closed once the leader was waited for.
func startTree(t *testing.T, cfg Config) (*Tree, int, <-chan struct{}) {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), helperEnv+"=tree")
	cmd.SysProcAttr = SysProcAttr()
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	tr := Attach(cmd.Process, cfg)
	require.NoError(t, tr.StartErr())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	child, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)
	waited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(waited)
	}()
	t.Cleanup(func() {
		tr.Kill()
		cmd.Process.Kill()
		<-waited
	})
	return tr, child, waited
}

func running(pid int) bool {
	h, err := xwin.OpenProcess(xwin.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return false
	}
	defer xwin.CloseHandle(h)
	ev, _ := xwin.WaitForSingleObject(h, 0)
	return ev == uint32(xwin.WAIT_TIMEOUT)
}

func TestJobRouteOnWindows(t *testing.T) {
	tr, child, waited := startTree(t, Config{})
	require.Equal(t, RouteJob, tr.Route(), "job refused: %v", tr.JobErr())
	assert.NotZero(t, tr.Identity().Start)
	assert.True(t, tr.Alive())
	assert.True(t, running(child))
	require.NoError(t, tr.Kill())
	<-waited
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, tr.WaitGone(ctx))
	assert.False(t, running(child), "the grandchild died with the job")
}

// refuseJobs makes the job route unavailable, as an old Windows or a strict parent job would.
type refuseJobs struct{ Sys }

func (refuseJobs) CreateJob() (Job, error) {
	return nil, errors.New("test: jobs refused")
}

func TestTaskkillRouteOnWindows(t *testing.T) {
	tr, child, waited := startTree(t, Config{Sys: refuseJobs{NativeSys()}})
	require.Equal(t, RouteTaskkill, tr.Route())
	require.NoError(t, tr.Kill())
	<-waited
	deadline := time.Now().Add(10 * time.Second)
	for running(child) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	assert.False(t, running(child), "taskkill /T reached the grandchild")
	// The leader is gone now: a second kill finds nothing to do.
	assert.NoError(t, tr.Kill())
}
