package procinspect

import (
	"errors"
	"fmt"

	"github.com/subkit/subkit/internal/inspect/win"
)

// The conversions of the Windows reader's answers, in plain Go so they are tested on any OS;
// snapshot_windows.go calls them.

// fromWindows converts one record of the Windows process table. Windows has no process
// groups, sessions or controlling terminals in the POSIX sense: Pgid, Sid, Tpgid and Tty
// stay 0.
func fromWindows(r *win.Record) Proc {
	return Proc{
		Identity: Identity{Pid: r.Pid, Start: r.Start},
		PPid:     r.PPid,
		Comm:     r.Comm,
		Zombie:   r.Zombie(),
	}
}

// tableFromWindows builds the Table of a Windows snapshot, or wraps the reader's error.
func tableFromWindows(recs []win.Record, err error) (*Table, error) {
	if err != nil {
		return nil, fmt.Errorf("procinspect: snapshot: %w", err)
	}
	procs := make([]Proc, len(recs))
	for i := range recs {
		procs[i] = fromWindows(&recs[i])
	}
	return NewTable(procs), nil
}

// lookupFromWindows is Lookup's answer for what the Windows reader gave for pid: a missing
// process gives an error wrapping ErrNotFound (and the reader's error).
func lookupFromWindows(pid int, r win.Record, err error) (Proc, error) {
	if errors.Is(err, win.ErrNotFound) {
		return Proc{}, fmt.Errorf("procinspect: lookup pid %d: %w: %w", pid, ErrNotFound, err)
	}
	if err != nil {
		return Proc{}, fmt.Errorf("procinspect: lookup pid %d: %w", pid, err)
	}
	return fromWindows(&r), nil
}

// aliveFromWindows is Alive's answer for what the Windows reader gave for id.
func aliveFromWindows(id Identity, alive bool, err error) (bool, error) {
	if err != nil {
		return false, fmt.Errorf("procinspect: alive %s: %w", id, err)
	}
	return alive, nil
}
