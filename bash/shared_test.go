package bash_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/bash"
	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/subprocess"
)

// An executor on a caller's Service: its commands run there, Close ends them and leaves the
// Service and its other trees alone, and the spill files stay under the executor's SpillDir.
func TestSharedService(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("its commands use POSIX utilities (head, tr, sleep, true) that Windows lacks")
	}
	mark := testutil.Mark()
	testutil.NoLeaks(t, mark)
	rc := filepath.Join(t.TempDir(), "rc")
	require.NoError(t, os.WriteFile(rc, []byte("echo sourced\n"), 0o644))
	svc, err := subprocess.New(subprocess.Config{Env: append(testutil.Env(mark), "BASH_ENV="+rc),
		TempDir: t.TempDir(), SpillDir: t.TempDir()})
	require.NoError(t, err)
	defer svc.Close()

	spill := t.TempDir()
	e, err := bash.New(bash.Config{Service: svc, SpillDir: spill, MaxOutputBytes: 1000})
	require.NoError(t, err)
	res, err := e.Exec(context.Background(), bash.Request{Command: `echo "[$BASH_ENV]"; head -c 100000 /dev/zero | tr '\0' x`})
	require.NoError(t, err)
	assert.NotContains(t, string(res.Stdout.Tail), "sourced")
	require.NotEmpty(t, res.Stdout.SpillPath)
	assert.True(t, strings.HasPrefix(res.Stdout.SpillPath, spill+string(filepath.Separator)), "spill %s under the executor's SpillDir", res.Stdout.SpillPath)
	head, err := os.ReadFile(res.Stdout.SpillPath)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(head), "[]\n"), "the Service's BASH_ENV is set empty, not sourced: %.20q", head)

	bg, err := e.Start(context.Background(), bash.Request{Command: `exec sleep 1000`})
	require.NoError(t, err)
	other, err := svc.Spawn(context.Background(), subprocess.Spec{Path: "sleep", Args: []string{"1000"}})
	require.NoError(t, err)

	require.NoError(t, e.Close())
	select {
	case <-bg.Done():
	default:
		t.Fatal("Close left the executor's background process running")
	}
	select {
	case <-other.Done():
		t.Fatal("Close ended a tree of the Service that was not the executor's")
	default:
	}
	res2, err := subprocess.Run(context.Background(), svc, subprocess.Spec{Path: "true"})
	require.NoError(t, err, "the Service is still open")
	assert.True(t, res2.Success())
	require.NoError(t, other.Terminate(ctxT(t, 10*time.Second)))
	require.NoError(t, other.Close())

	_, err = bash.New(bash.Config{Service: svc, Guard: true, TempDir: "/tmp"})
	var ce *bash.ConfigError
	require.ErrorAs(t, err, &ce)
	assert.ErrorIs(t, err, bash.ErrInvalid)
	assert.Equal(t, "Service", ce.Field)
	assert.Contains(t, ce.Error(), "Guard, TempDir configure the executor's own Service")
}

// Every closed error says subprocess.ErrClosed too: a closed executor, a caller's Service
// closed under a live executor, and a caller's Service already closed at New.
func TestClosedIsServiceClosed(t *testing.T) {
	e, _ := newExecutor(t, bash.Config{})
	require.NoError(t, e.Close())
	_, err := e.Exec(context.Background(), bash.Request{Command: "true"})
	require.ErrorIs(t, err, bash.ErrClosed)
	require.ErrorIs(t, err, subprocess.ErrClosed)
	_, err = e.Start(context.Background(), bash.Request{Command: "true"})
	require.ErrorIs(t, err, subprocess.ErrClosed)
	require.ErrorIs(t, e.Sweep(context.Background()), subprocess.ErrClosed)
	assert.ErrorIs(t, bash.ErrClosed, subprocess.ErrClosed)
	assert.NotErrorIs(t, subprocess.ErrClosed, bash.ErrClosed, "the Service's closing is not the executor's")

	mark := testutil.Mark()
	testutil.NoLeaks(t, mark)
	svc, err := subprocess.New(subprocess.Config{Env: testutil.Env(mark), TempDir: t.TempDir()})
	require.NoError(t, err)
	shared, err := bash.New(bash.Config{Service: svc, SpillDir: t.TempDir()})
	require.NoError(t, err)
	require.NoError(t, svc.Close())
	_, err = shared.Exec(context.Background(), bash.Request{Command: "true"})
	require.ErrorIs(t, err, bash.ErrClosed)
	require.ErrorIs(t, err, subprocess.ErrClosed)
	assert.Contains(t, err.Error(), "Service")
	require.NoError(t, shared.Close())

	_, err = bash.New(bash.Config{Service: svc, SpillDir: t.TempDir()})
	require.ErrorIs(t, err, bash.ErrClosed)
	require.ErrorIs(t, err, subprocess.ErrClosed)
	assert.NotContains(t, err.Error(), "no such file")
}
