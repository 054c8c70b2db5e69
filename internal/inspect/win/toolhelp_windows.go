//go:build windows

package win

import (
	"context"
	"errors"
	"fmt"
	"math"
	"unsafe"

	xwin "golang.org/x/sys/windows"
)

// Snapshot reads every process: one Toolhelp32 walk, then one open per process for its
// creation time (see the package documentation for what is left out and what keeps Start
// 0). The context is checked before the walk and before each open.
func Snapshot(ctx context.Context) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("procinspect/win: snapshot: %w", err)
	}
	taken := now()
	entries, err := walk()
	if err != nil {
		return nil, fmt.Errorf("procinspect/win: snapshot: %w", err)
	}
	recs, err := Assemble(ctx, entries, taken, created)
	if err != nil {
		return nil, fmt.Errorf("procinspect/win: snapshot: %w", err)
	}
	return recs, nil
}

// Lookup reads one process: a whole Toolhelp32 walk (it has no per-process query), then an
// open of that process for its creation time. A process that does not exist gives an error
// wrapping ErrNotFound.
func Lookup(ctx context.Context, pid int) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, fmt.Errorf("procinspect/win: lookup pid %d: %w", pid, err)
	}
	taken := now()
	entries, err := walk()
	if err != nil {
		return Record{}, fmt.Errorf("procinspect/win: lookup pid %d: %w", pid, err)
	}
	var one []Entry
	for _, e := range entries {
		if e.Pid == pid {
			one = append(one, e)
			break
		}
	}
	recs, err := Assemble(ctx, one, taken, created)
	if err != nil {
		return Record{}, fmt.Errorf("procinspect/win: lookup pid %d: %w", pid, err)
	}
	return Pick(recs, pid)
}

// Alive reports whether pid is a live process created at start, from one open of the
// process (see the package documentation). A process that does not exist is not alive:
// the error is nil then. A process that cannot be opened gives an error (wrapping
// ERROR_ACCESS_DENIED, so errors.Is(err, fs.ErrPermission) holds): its identity cannot be
// checked.
func Alive(ctx context.Context, pid int, start uint64) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, fmt.Errorf("procinspect/win: alive pid %d: %w", pid, err)
	}
	c, exited, err := probe(pid)
	ok, err := Judge(start, err, c, exited)
	if err != nil {
		return false, fmt.Errorf("procinspect/win: alive pid %d: %w", pid, err)
	}
	return ok, nil
}

// walk lists the processes with CreateToolhelp32Snapshot, Process32First and Process32Next.
func walk() ([]Entry, error) {
	h, err := xwin.CreateToolhelp32Snapshot(xwin.TH32CS_SNAPPROCESS, 0)
	if err != nil {
		return nil, fmt.Errorf("CreateToolhelp32Snapshot: %w", err)
	}
	var entries []Entry
	var pe xwin.ProcessEntry32
	pe.Size = uint32(unsafe.Sizeof(pe))
	err = xwin.Process32First(h, &pe)
	for err == nil {
		entries = append(entries, Entry{Pid: int(pe.ProcessID), PPid: int(pe.ParentProcessID),
			Threads: int(pe.Threads), Exe: xwin.UTF16ToString(pe.ExeFile[:])})
		err = xwin.Process32Next(h, &pe)
	}
	if errors.Is(err, xwin.ERROR_NO_MORE_FILES) {
		err = nil
	} else {
		err = fmt.Errorf("Process32Next: %w", err)
	}
	if cerr := xwin.CloseHandle(h); cerr != nil && err == nil {
		err = fmt.Errorf("CloseHandle(toolhelp snapshot): %w", cerr)
	}
	if err != nil {
		return nil, err
	}
	return entries, nil
}

// now is the system time as a FILETIME, the clock creation times are stamped from. It is
// the precise reading: GetSystemTimeAsFileTime gives the time of the last clock tick (up to
// 15.6 ms ago), which can be earlier than the creation time of a process started since,
// and Assemble would then take that live process for one whose pid was reused.
func now() uint64 {
	var ft xwin.Filetime
	xwin.GetSystemTimePreciseAsFileTime(&ft)
	return filetime(ft)
}

func filetime(ft xwin.Filetime) uint64 {
	return uint64(ft.HighDateTime)<<32 | uint64(ft.LowDateTime)
}

// open opens pid with access; a pid that names no process gives an error wrapping
// ErrNotFound.
func open(pid int, access uint32) (xwin.Handle, error) {
	if pid <= 0 || int64(pid) > math.MaxUint32 {
		return 0, fmt.Errorf("OpenProcess pid %d: %w", pid, ErrNotFound)
	}
	h, err := xwin.OpenProcess(access, false, uint32(pid))
	if errors.Is(err, xwin.ERROR_INVALID_PARAMETER) {
		return 0, fmt.Errorf("OpenProcess pid %d: %w: %w", pid, ErrNotFound, err)
	}
	if err != nil {
		return 0, fmt.Errorf("OpenProcess pid %d: %w", pid, err)
	}
	return h, nil
}

// creation reads the creation time of the process h holds.
func creation(h xwin.Handle) (uint64, error) {
	var c, e, k, u xwin.Filetime
	if err := xwin.GetProcessTimes(h, &c, &e, &k, &u); err != nil {
		return 0, fmt.Errorf("GetProcessTimes: %w", err)
	}
	return filetime(c), nil
}

// created reads the creation time of pid.
func created(pid int) (uint64, error) {
	h, err := open(pid, xwin.PROCESS_QUERY_LIMITED_INFORMATION)
	if err != nil {
		return 0, err
	}
	c, err := creation(h)
	return c, closeAfter(h, err)
}

// probe opens pid for Alive and reads its creation time and whether it has exited.
func probe(pid int) (created uint64, exited bool, err error) {
	h, err := open(pid, xwin.PROCESS_QUERY_LIMITED_INFORMATION|xwin.SYNCHRONIZE)
	sync := err == nil
	if errors.Is(err, xwin.ERROR_ACCESS_DENIED) {
		h, err = open(pid, xwin.PROCESS_QUERY_LIMITED_INFORMATION)
	}
	if err != nil {
		return 0, false, err
	}
	created, err = creation(h)
	if err == nil {
		exited, err = hasExited(h, sync)
	}
	return created, exited, closeAfter(h, err)
}

// hasExited asks whether the process h holds has exited: by waiting on it with a zero
// timeout when h has SYNCHRONIZE access, else by its exit code, which reads STILL_ACTIVE
// (259) while it runs and also for a process that exited with that status.
func hasExited(h xwin.Handle, sync bool) (bool, error) {
	if sync {
		ev, err := xwin.WaitForSingleObject(h, 0)
		switch {
		case err != nil:
			return false, fmt.Errorf("WaitForSingleObject: %w", err)
		case ev == xwin.WAIT_OBJECT_0:
			return true, nil
		case ev == uint32(xwin.WAIT_TIMEOUT):
			return false, nil
		}
		return false, fmt.Errorf("WaitForSingleObject: unexpected result %#x", ev)
	}
	var code uint32
	if err := xwin.GetExitCodeProcess(h, &code); err != nil {
		return false, fmt.Errorf("GetExitCodeProcess: %w", err)
	}
	return code != stillActive, nil
}

// stillActive is STILL_ACTIVE, the exit code GetExitCodeProcess reports for a running
// process.
const stillActive = 259

// closeAfter closes h and returns err, or the close's error when err is nil.
func closeAfter(h xwin.Handle, err error) error {
	if cerr := xwin.CloseHandle(h); cerr != nil && err == nil {
		return fmt.Errorf("CloseHandle(process): %w", cerr)
	}
	return err
}
