//go:build windows

package procinspect

import (
	"context"
	"fmt"

	"github.com/subkit/subkit/internal/inspect/win"
)

// Snapshot reads the whole process table once.
//
// On Windows it walks the Toolhelp32 process list once and opens each process for its
// creation time (see package internal/inspect/win): a process that exited in between is left
// out, and one that cannot be opened (a protected process, another user's) is kept with
// Start 0.
func Snapshot(ctx context.Context) (*Table, error) {
	return tableFromWindows(win.Snapshot(ctx))
}

// Lookup reads one process. On Windows it walks the whole Toolhelp32 process list (there is
// no per-process query) and opens that one process for its creation time. A missing process
// gives an error wrapping ErrNotFound.
func Lookup(ctx context.Context, pid int) (Proc, error) {
	r, err := win.Lookup(ctx, pid)
	return lookupFromWindows(pid, r, err)
}

// Alive reports whether id.Pid is a live process whose start token equals
// id.Start. It returns false and a nil error when the process is gone, when a
// different process now has the pid, or when the process has exited while a handle
// still holds it. An error means the process could not be read at all. On Windows it
// opens the one process: one that cannot be opened (ERROR_ACCESS_DENIED, for which
// errors.Is(err, fs.ErrPermission) holds) gives an error, and an identity whose Start
// is 0 (read from a process that could not be opened) never checks as alive.
func Alive(ctx context.Context, id Identity) (bool, error) {
	ok, err := win.Alive(ctx, id.Pid, id.Start)
	return aliveFromWindows(id, ok, err)
}

// Environ returns a process's initial environment. It is implemented on
// Linux only: on Windows it fails with an error wrapping ErrUnsupported.
func Environ(ctx context.Context, pid int) ([]string, error) {
	return nil, fmt.Errorf("procinspect: environ of pid %d on windows: %w", pid, ErrUnsupported)
}
