//go:build darwin

package procinspect

import (
	"context"
	"fmt"

	"github.com/subkit/subkit/internal/inspect/darwin"
)

// Snapshot reads the whole process table once.
//
// On macOS it makes one sysctl kern.proc.all read (see internal/inspect/darwin) and
// then reads each live process's session id with getsid(2); Sid is -1 for a process that
// exited in between and for a zombie.
func Snapshot(ctx context.Context) (*Table, error) {
	return tableFromDarwin(darwin.Snapshot(ctx))
}

// Lookup reads one process. On macOS it makes one sysctl kern.proc.pid.<pid> read and one
// getsid(2). A zombie is returned like any process (use Alive to tell). A missing process
// gives an error wrapping ErrNotFound.
func Lookup(ctx context.Context, pid int) (Proc, error) {
	r, err := darwin.Lookup(ctx, pid)
	return lookupFromDarwin(pid, r, err)
}

// Alive reports whether id.Pid is a live process whose start token equals
// id.Start. It returns false and a nil error when the process is gone, when a
// different process now has the pid, or when the process is a zombie (exited,
// not yet reaped). An error means the process could not be read at all. On macOS it
// makes one sysctl kern.proc.pid.<pid> read.
func Alive(ctx context.Context, id Identity) (bool, error) {
	ok, err := darwin.Alive(ctx, id.Pid, id.Start)
	return aliveFromDarwin(id, ok, err)
}

// Environ returns a process's initial environment. It is implemented on
// Linux only: on macOS it fails with an error wrapping ErrUnsupported.
func Environ(ctx context.Context, pid int) ([]string, error) {
	return nil, fmt.Errorf("procinspect: environ of pid %d on darwin: %w", pid, ErrUnsupported)
}
