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

// These bind the routes to the real calls. `make test-windows` runs them under Wine; what Wine
// cannot do skips there, naming the gap, and runs on Windows only.

// startTree starts the helper in mode "tree" suspended in a group of its own, attaches it, and
// returns the tree, the grandchild's pid, and a channel closed once the leader was waited for.
func startTree(t *testing.T, cfg Config) (*Tree, int, <-chan struct{}) {
	t.Helper()
	tr, cmd, line, waited := startHelper(t, "tree", cfg)
	child, err := strconv.Atoi(line)
	require.NoError(t, err)
	t.Cleanup(func() {
		tr.Kill()
		cmd.Process.Kill()
		<-waited
	})
	return tr, child, waited
}

// startHelper starts the helper in mode suspended in a group of its own, attaches it, and
// returns the tree, the command, the first line the helper printed, and a channel closed once
// the leader was waited for.
func startHelper(t *testing.T, mode string, cfg Config) (*Tree, *exec.Cmd, string, <-chan struct{}) {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), helperEnv+"="+mode)
	cmd.SysProcAttr = SysProcAttr()
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	tr := Attach(cmd.Process, cfg)
	require.NoError(t, tr.StartErr())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	waited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(waited)
	}()
	return tr, cmd, strings.TrimSpace(line), waited
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
	require.NotZero(t, tr.Identity().Start)
	p, err := NativeSys().OpenProcess(tr.Identity().Pid)
	require.NoError(t, err)
	start, err := p.Start()
	assert.NoError(t, p.Close())
	require.NoError(t, err)
	assert.Equal(t, tr.Identity().Start, start, "the identity recorded at Attach is the leader's creation time")
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
	skipUnderWine(t, "taskkill.exe rejects /T (usage error, exit 1), so the taskkill route cannot end a tree")
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

// A job seen empty is released, and the tree is never acted on again.
func TestJobEmptiesOnWindows(t *testing.T) {
	tr, cmd, line, waited := startHelper(t, "0:done\n", Config{})
	require.Equal(t, RouteJob, tr.Route(), "job refused: %v", tr.JobErr())
	assert.Equal(t, "done", line)
	<-waited
	assert.Equal(t, 0, cmd.ProcessState.ExitCode())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, tr.WaitGone(ctx))
	assert.False(t, tr.Alive())
	assert.NoError(t, tr.Kill(), "a tree already gone: nothing to do")
}

// CTRL_BREAK_EVENT reaches a console program in the tree's group (this process must share a
// console with it). Interrupt is refused once the leader has exited.
func TestInterruptOnWindows(t *testing.T) {
	skipUnderWine(t, "the test binary has no console (GenerateConsoleCtrlEvent fails with Invalid access), and Wine 8 does not deliver CTRL_BREAK_EVENT to a child")
	tr, cmd, line, waited := startHelper(t, "break", Config{})
	require.Equal(t, "ready", line)
	if err := tr.Interrupt(); err != nil {
		cmd.Process.Kill()
		<-waited
		t.Skipf("no console shared with the tree: %v", err)
	}
	select {
	case <-waited:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-waited
		t.Fatal("CTRL_BREAK_EVENT did not reach the leader")
	}
	assert.Equal(t, breakExit, cmd.ProcessState.ExitCode())
	assert.ErrorIs(t, tr.Interrupt(), ErrNoProcess, "the leader has exited")
}
