package procinspect

import (
	"errors"
	"fmt"

	"github.com/subkit/subkit/internal/inspect/darwin"
)

// The conversions of the macOS reader's answers, in plain Go so they are tested on any OS;
// snapshot_darwin.go calls them.

// fromDarwin converts one record of the macOS process table.
func fromDarwin(r *darwin.Record) Proc {
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

// tableFromDarwin builds the Table of a macOS snapshot, or wraps the reader's error.
func tableFromDarwin(recs []darwin.Record, err error) (*Table, error) {
	if err != nil {
		return nil, fmt.Errorf("procinspect: snapshot: %w", err)
	}
	procs := make([]Proc, len(recs))
	for i := range recs {
		procs[i] = fromDarwin(&recs[i])
	}
	return NewTable(procs), nil
}

// lookupFromDarwin is Lookup's answer for what the macOS reader gave for pid: a missing
// process gives an error wrapping ErrNotFound (and the reader's error).
func lookupFromDarwin(pid int, r darwin.Record, err error) (Proc, error) {
	if errors.Is(err, darwin.ErrNotFound) {
		return Proc{}, fmt.Errorf("procinspect: lookup pid %d: %w: %w", pid, ErrNotFound, err)
	}
	if err != nil {
		return Proc{}, fmt.Errorf("procinspect: lookup pid %d: %w", pid, err)
	}
	return fromDarwin(&r), nil
}

// aliveFromDarwin is Alive's answer for what the macOS reader gave for id.
func aliveFromDarwin(id Identity, alive bool, err error) (bool, error) {
	if err != nil {
		return false, fmt.Errorf("procinspect: alive %s: %w", id, err)
	}
	return alive, nil
}
