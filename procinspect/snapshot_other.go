//go:build !linux && !darwin && !windows

package procinspect

import (
	"context"
	"fmt"
	"runtime"
)

// Snapshot reads the whole process table once. There is no implementation on
// this operating system: it fails with an error wrapping ErrUnsupported.
func Snapshot(ctx context.Context) (*Table, error) {
	return nil, fmt.Errorf("procinspect: snapshot on %s: %w", runtime.GOOS, ErrUnsupported)
}

// Lookup reads one process. There is no implementation on this operating
// system: it fails with an error wrapping ErrUnsupported.
func Lookup(ctx context.Context, pid int) (Proc, error) {
	return Proc{}, fmt.Errorf("procinspect: lookup pid %d on %s: %w", pid, runtime.GOOS, ErrUnsupported)
}

// Alive reports whether id names a live process. There is no implementation
// on this operating system: it fails with an error wrapping ErrUnsupported.
func Alive(ctx context.Context, id Identity) (bool, error) {
	return false, fmt.Errorf("procinspect: alive %s on %s: %w", id, runtime.GOOS, ErrUnsupported)
}

// Environ returns a process's initial environment. It is implemented on
// Linux only: here it fails with an error wrapping ErrUnsupported.
func Environ(ctx context.Context, pid int) ([]string, error) {
	return nil, fmt.Errorf("procinspect: environ of pid %d on %s: %w", pid, runtime.GOOS, ErrUnsupported)
}
