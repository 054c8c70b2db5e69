//go:build windows

package subprocess

import (
	"context"
	"errors"
	"io/fs"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	xwin "golang.org/x/sys/windows"

	winproc "github.com/subkit/subkit/internal/windows"
)

// These run on Windows, and under Wine through `make test-windows`.

func TestWindowsBackendSeam(t *testing.T) {
	b, err := newBackend(Config{})
	if err != nil {
		t.Fatal(err)
	}
	assert.True(t, b.envRules().foldCase)
	assert.Equal(t, ";", b.pathRules().listSep)
	assert.Equal(t, parsePathExt(""), b.pathRules().exts)

	cmd := &exec.Cmd{}
	b.prepare(cmd)
	require.NotNil(t, cmd.SysProcAttr)
	assert.Equal(t, uint32(xwin.CREATE_SUSPENDED|xwin.CREATE_NEW_PROCESS_GROUP), cmd.SysProcAttr.CreationFlags)

	var tr windowsTree
	assert.ErrorIs(t, tr.signal(syscall.SIGTERM), ErrInvalid)
}

func TestWindowsSpawnAndTerminate(t *testing.T) {
	svc, err := New(Config{TempDir: t.TempDir(), SpillDir: t.TempDir()})
	require.NoError(t, err)
	defer func() { assert.NoError(t, svc.Close()) }()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	h, err := svc.Spawn(ctx, Spec{Path: "cmd", Args: []string{"/c", "echo hello"}})
	require.NoError(t, err)
	res, err := h.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode)
	assert.Equal(t, "hello", strings.TrimSpace(string(res.Stdout.Tail)))
	require.NoError(t, h.Close())

	// cmd starts ping as a child: the whole tree ends with the job.
	h, err = svc.Spawn(ctx, Spec{Path: "cmd", Args: []string{"/c", "ping -n 120 127.0.0.1 >NUL"},
		Grace: 200 * time.Millisecond})
	require.NoError(t, err)
	wt := h.tree.(*windowsTree)
	require.Equal(t, winproc.RouteJob, wt.t.Route(), "job refused: %v", wt.t.JobErr())
	require.NoError(t, h.Terminate(ctx))
	require.NoError(t, h.WaitForExit(ctx))
	res, err = h.Wait(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, 0, res.ExitCode)
	assert.False(t, h.tree.alive())
	require.NoError(t, h.Close())
}

func TestWindowsStartErrorKinds(t *testing.T) {
	b := windowsBackend{}
	for errno, want := range map[syscall.Errno]error{
		xwin.ERROR_BAD_EXE_FORMAT:       ErrPermission,
		xwin.ERROR_NOT_ENOUGH_MEMORY:    ErrLimit,
		xwin.ERROR_NO_SYSTEM_RESOURCES:  ErrLimit,
		xwin.ERROR_TOO_MANY_OPEN_FILES:  ErrLimit,
		xwin.ERROR_FILENAME_EXCED_RANGE: ErrLimit,
	} {
		kind, hint := b.startError(&fs.PathError{Op: "fork/exec", Path: `C:\x.exe`, Err: errno})
		assert.Equal(t, want, kind, "%v", errno)
		assert.NotEmpty(t, hint, "%v", errno)
	}
	kind, _ := b.startError(errors.New("something else"))
	assert.Nil(t, kind, "left to the portable classification")

	// Through the Service's classification: not found comes first, then the backend's kinds.
	s := &Service{backend: b}
	err := s.startError("x", &fs.PathError{Op: "fork/exec", Path: "x", Err: xwin.ERROR_BAD_EXE_FORMAT})
	assert.ErrorIs(t, err, ErrPermission)
	assert.ErrorIs(t, err, xwin.ERROR_BAD_EXE_FORMAT)
	assert.ErrorIs(t, s.startError("x", &fs.PathError{Op: "fork/exec", Path: "x", Err: xwin.ERROR_FILE_NOT_FOUND}), ErrNotFound)
	assert.ErrorIs(t, s.startError("x", &fs.PathError{Op: "fork/exec", Path: "x", Err: xwin.ERROR_ACCESS_DENIED}), ErrPermission)
}
