package win

import (
	"context"
	"errors"
	"fmt"
)

// Entry is one process as the Toolhelp32 walk lists it.
type Entry struct {
	Pid     int    // th32ProcessID
	PPid    int    // th32ParentProcessID: the creator's pid, never updated
	Threads int    // cntThreads: 0 for a process that exited while its object is held
	Exe     string // szExeFile: the executable's file name, not its path
}

// Record is one process of the table.
type Record struct {
	Pid int
	// PPid is the pid of the process that created this one, at the time it did. Windows
	// never changes it, so once that process has exited the pid may name a newer one.
	PPid int
	// Threads is the number of threads; 0 for a process that has exited but whose process
	// object is still held by a handle.
	Threads int
	// Start is the creation time as a FILETIME: 100-nanosecond intervals since 1601-01-01
	// UTC. It is 0 when the process could not be opened (see StartErr).
	Start uint64
	// StartErr says why Start is 0: the error of opening the process or of reading its
	// times (it wraps ERROR_ACCESS_DENIED, so errors.Is(err, fs.ErrPermission) holds, for a
	// protected process or another user's), or ErrNoObject for pid 0. It is nil when Start
	// was read.
	StartErr error
	// Comm is the executable's file name, "cmd.exe" (not its path).
	Comm string
}

// Zombie reports whether the process has exited while a handle still holds its object.
func (r Record) Zombie() bool { return r.Threads == 0 && r.Pid != 0 }

// ErrNotFound is wrapped by the error of a lookup of a process that does not exist (or
// exited before it could be read), and by the error an opener returns for one.
var ErrNotFound = errors.New("procinspect/win: no such process")

// ErrNoObject is the StartErr of pid 0, the System Idle Process, which has no process
// object to open and so no creation time.
var ErrNoObject = errors.New("procinspect/win: pid 0 (System Idle Process) has no process object")

// Assemble joins the entries of one Toolhelp32 walk with the creation times that created
// reads (one call per process, in entry order), into the records of a snapshot:
//
//   - created failing with an error wrapping ErrNotFound: the process exited after the walk
//     and is left out;
//   - a creation time after taken (the system time, as a FILETIME, stamped before the walk):
//     the pid was reused after the walk, the process the walk listed is gone, and it is left
//     out;
//   - created failing otherwise: the record keeps Start 0, and StartErr holds the error;
//   - pid 0 is not read: Start 0, StartErr ErrNoObject.
//
// The context is checked before each read; once it is done Assemble returns its error.
func Assemble(ctx context.Context, entries []Entry, taken uint64, created func(pid int) (uint64, error)) ([]Record, error) {
	recs := make([]Record, 0, len(entries))
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		r := Record{Pid: e.Pid, PPid: e.PPid, Threads: e.Threads, Comm: e.Exe}
		if e.Pid == 0 {
			r.StartErr = ErrNoObject
			recs = append(recs, r)
			continue
		}
		start, err := created(e.Pid)
		switch {
		case errors.Is(err, ErrNotFound):
			continue
		case err != nil:
			r.StartErr = err
		case start > taken:
			continue
		default:
			r.Start = start
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// Pick returns the record of pid among recs, or an error wrapping ErrNotFound.
func Pick(recs []Record, pid int) (Record, error) {
	for _, r := range recs {
		if r.Pid == pid {
			return r, nil
		}
	}
	return Record{}, fmt.Errorf("procinspect/win: pid %d: %w", pid, ErrNotFound)
}

// Judge is Alive's answer from what opening the process gave: the error of the opening
// (or of reading its times), its creation time, and whether it has exited. A process that
// does not exist (an error wrapping ErrNotFound) is not alive, with no error; any other
// error is returned, since the identity could not be checked; otherwise the process is
// alive when its creation time is start and it has not exited. A start of 0 never matches.
func Judge(start uint64, err error, created uint64, exited bool) (bool, error) {
	switch {
	case errors.Is(err, ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return start != 0 && created == start && !exited, nil
}
