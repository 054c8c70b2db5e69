//go:build darwin

package procinspect

import (
	"context"
	"errors"
	"fmt"

	"github.com/subkit/subkit/procinspect/darwin"
)

// Snapshot reads the whole process table once.
//
// On macOS it runs ps(1) once (see package procinspect/darwin for the columns)
// and then reads each process's session id with getsid(2); Sid is -1 for a
// process that exited in between.
func Snapshot(ctx context.Context) (*Table, error) {
	recs, err := darwin.Snapshot(ctx)
	if err != nil {
		return nil, fmt.Errorf("procinspect: snapshot: %w", err)
	}
	procs := make([]Proc, len(recs))
	for i := range recs {
		procs[i] = fromRecord(&recs[i])
	}
	return NewTable(procs), nil
}

// Lookup reads one process. On macOS it runs ps(1) for that pid. A zombie is
// returned like any process (use Alive to tell). A missing process gives an
// error wrapping ErrNotFound.
func Lookup(ctx context.Context, pid int) (Proc, error) {
	rec, err := darwin.Lookup(ctx, pid)
	if err != nil {
		if errors.Is(err, darwin.ErrNotFound) {
			return Proc{}, fmt.Errorf("procinspect: lookup pid %d: %w: %w", pid, ErrNotFound, err)
		}
		return Proc{}, fmt.Errorf("procinspect: lookup pid %d: %w", pid, err)
	}
	return fromRecord(&rec), nil
}

// Alive reports whether id.Pid is a live process whose start token equals
// id.Start. It returns false and a nil error when the process is gone, when a
// different process now has the pid, or when the process is a zombie (exited,
// not yet reaped). An error means the process could not be read at all.
func Alive(ctx context.Context, id Identity) (bool, error) {
	rec, err := darwin.Lookup(ctx, id.Pid)
	if err != nil {
		if errors.Is(err, darwin.ErrNotFound) {
			return false, nil
		}
		return false, fmt.Errorf("procinspect: alive %s: %w", id, err)
	}
	return !rec.Zombie() && rec.Start == id.Start, nil
}

// Environ returns a process's initial environment. It is implemented on
// Linux only: on macOS it fails with an error wrapping ErrUnsupported.
func Environ(ctx context.Context, pid int) ([]string, error) {
	return nil, fmt.Errorf("procinspect: environ of pid %d on darwin: %w", pid, ErrUnsupported)
}

func fromRecord(r *darwin.Record) Proc {
	return Proc{
		Identity: Identity{Pid: r.Pid, Start: r.Start},
		PPid:     r.PPid,
		Pgid:     r.Pgid,
		Sid:      r.Sid,
		Tpgid:    r.Tpgid,
		Tty:      r.Tty,
		Comm:     r.Comm,
		Zombie:   r.Zombie(),
	}
}
