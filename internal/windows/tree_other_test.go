//go:build !windows

package windows

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Off Windows, Attach on a real process finds no OS calls: it cannot resume the leader, so it
// ends it and says why, and it never kills by pid without an identity.
func TestAttachOffWindowsEndsTheLeader(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), helperEnv+"=sleep")
	require.NoError(t, cmd.Start())
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()

	tr := Attach(cmd.Process, Config{})
	require.Error(t, tr.StartErr())
	assert.Equal(t, RouteTaskkill, tr.Route())
	assert.ErrorIs(t, tr.JobErr(), ErrJobRefused)
	select {
	case <-waited:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-waited
		t.Fatal("the leader Attach could not resume was not ended")
	}
	assert.ErrorIs(t, tr.Kill(), ErrIdentityUnknown)
	assert.False(t, tr.Alive())
	assert.NoError(t, tr.WaitGone(context.Background()))
}
