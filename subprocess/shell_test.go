package subprocess_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/subprocess"
)

// The kit's own shell runs a script as a tree of the Service: its status and output, its
// programs as the helper's children, the role variable not passed on, and a Timeout that ends
// the tree with a program still running below the shell.
func TestShell(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	sh, err := svc.Shell()
	require.NoError(t, err)
	spec := func(script string) subprocess.Spec {
		return subprocess.Spec{Path: sh.Path, Args: []string{"-c", script}, Env: sh.Env}
	}

	res := run(t, svc, spec(`echo "$0 hi ${SUBKIT_HELPER-unset}"; exit 3`))
	assert.Equal(t, 3, res.ExitCode, "%s", res.Stderr.Tail)
	assert.Equal(t, "sh hi unset\n", string(res.Stdout.Tail))

	long := "sleep 1000"
	if runtime.GOOS == "windows" {
		long = "ping -n 1000 127.0.0.1 >/dev/null"
	}
	s := spec("echo started; " + long)
	s.Timeout, s.Grace = 2*time.Second, 500*time.Millisecond
	h, err := svc.Spawn(ctxT(t, time.Minute), s)
	require.NoError(t, err)
	defer h.Close()
	res, err = h.Wait(ctxT(t, time.Minute))
	require.NoError(t, err)
	assert.True(t, res.TimedOut)
	assert.Equal(t, "started\n", string(res.Stdout.Tail))
	require.NoError(t, h.WaitForExit(ctxT(t, time.Minute)), "the program below the shell ended with it")
}

// Without a helper executable Shell says how to get one.
func TestShellInvalid(t *testing.T) {
	_, err := (*subprocess.Service)(nil).Shell()
	require.ErrorIs(t, err, subprocess.ErrInvalid)
	_, err = newService(t, subprocess.Config{Helper: "/no/such/helper"}).Shell()
	require.ErrorIs(t, err, subprocess.ErrNotFound)
	assert.Contains(t, err.Error(), "Config.Helper")
}
