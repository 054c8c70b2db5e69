//go:build linux

package procinspect

import (
	"context"
	"fmt"

	"github.com/subkit/subkit/internal/inspect/linux"
)

// Snapshot reads the whole process table once.
//
// On Linux it lists /proc and reads each /proc/<pid>/stat once; processes that
// exit during the scan, or that procfs hides from this user, are left out.
func Snapshot(ctx context.Context) (*Table, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("procinspect: snapshot: %w", err)
	}
	stats, err := linux.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("procinspect: snapshot: %w", err)
	}
	procs := make([]Proc, len(stats))
	for i := range stats {
		procs[i] = fromStat(&stats[i])
	}
	return NewTable(procs), nil
}

// Lookup reads one process. On Linux it reads only /proc/<pid>/stat. A zombie
// is returned like any process (use Alive to tell). A missing process gives an
// error wrapping ErrNotFound.
func Lookup(ctx context.Context, pid int) (Proc, error) {
	if err := ctx.Err(); err != nil {
		return Proc{}, fmt.Errorf("procinspect: lookup pid %d: %w", pid, err)
	}
	st, err := linux.ReadStat(pid)
	if err != nil {
		if linux.IsNotExist(err) {
			return Proc{}, fmt.Errorf("procinspect: lookup pid %d: %w: %w", pid, ErrNotFound, err)
		}
		return Proc{}, fmt.Errorf("procinspect: lookup pid %d: %w", pid, err)
	}
	return fromStat(&st), nil
}

// Alive reports whether id.Pid is a live process whose start token equals
// id.Start. It returns false and a nil error when the process is gone, when a
// different process now has the pid, or when the process is a zombie (exited,
// not yet reaped). An error means the process could not be read at all.
func Alive(ctx context.Context, id Identity) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("procinspect: alive %s: %w", id, err)
	}
	st, err := linux.ReadStat(id.Pid)
	if err != nil {
		if linux.IsNotExist(err) {
			return false, nil
		}
		return false, fmt.Errorf("procinspect: alive %s: %w", id, err)
	}
	return !st.Zombie() && st.StartTime == id.Start, nil
}

// Environ returns the environment process pid was started with, as
// "NAME=value" strings, read from /proc/<pid>/environ. Changes the process
// made to its own environment later are not visible, and a process fresh out
// of execve can read as empty for a moment. Reading another user's
// process needs privilege (the error wraps fs.ErrPermission); a missing
// process gives an error wrapping ErrNotFound. Environ is implemented on
// Linux only; elsewhere it fails with an error wrapping ErrUnsupported.
func Environ(ctx context.Context, pid int) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("procinspect: environ of pid %d: %w", pid, err)
	}
	env, err := linux.ReadEnviron(pid)
	if err != nil {
		if linux.IsNotExist(err) {
			return nil, fmt.Errorf("procinspect: environ of pid %d: %w: %w", pid, ErrNotFound, err)
		}
		return nil, fmt.Errorf("procinspect: environ of pid %d: %w", pid, err)
	}
	return env, nil
}

func fromStat(st *linux.Stat) Proc {
	var tty uint64
	if st.TtyNr > 0 {
		tty = uint64(st.TtyNr)
	}
	return Proc{
		Identity: Identity{Pid: st.Pid, Start: st.StartTime},
		PPid:     st.PPid,
		Pgid:     st.Pgrp,
		Sid:      st.Session,
		Tpgid:    st.Tpgid,
		Tty:      tty,
		Comm:     st.Comm,
		Zombie:   st.Zombie(),
	}
}
