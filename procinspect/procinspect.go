package procinspect

import (
	"cmp"
	"errors"
	"slices"
	"strconv"
)

// Identity names one process exactly: its pid plus the platform's raw start
// token. Two processes are the same only if both fields match.
type Identity struct {
	// Pid is the process id.
	Pid int
	// Start is the platform's raw start token: on Linux the starttime clock
	// ticks since boot (field 22 of /proc/<pid>/stat), on macOS the kinfo_proc
	// p_starttime in microseconds since the Unix epoch, on Windows the creation
	// FILETIME (100-nanosecond intervals since 1601-01-01 UTC; 0 when the process
	// could not be opened, a token no identity check accepts). Only tokens read
	// on the same host and platform are comparable;
	// for processes related as parent and child, the child's token is never
	// smaller.
	Start uint64
}

// String formats the identity as "pid@start", e.g. "1234@98765".
func (id Identity) String() string {
	b := make([]byte, 0, 32)
	b = strconv.AppendInt(b, int64(id.Pid), 10)
	b = append(b, '@')
	b = strconv.AppendUint(b, id.Start, 10)
	return string(b)
}

// Proc is one process as read from the process table.
type Proc struct {
	Identity
	// PPid is the parent's pid. On Unix it changes when the parent exits and
	// the process is re-parented (to init or a subreaper). On Windows it is the
	// creator's pid and never changes: once the creator has exited, the pid may
	// name a newer, unrelated process (the tree walks fence such links by start
	// token). Under Wine a process started from the Unix side has PPid 0.
	PPid int
	// Pgid is the process group id. It is 0 on Windows, which has no process
	// groups.
	Pgid int
	// Sid is the session id (the pid of the session leader). On macOS it is
	// read with getsid(2) right after the process table and is -1 when that
	// failed (the process exited in between, or is a zombie). It is 0 on
	// Windows, which has no POSIX sessions (its Remote Desktop session number
	// is another thing and is not reported).
	Sid int
	// Tpgid is the foreground process group of the controlling terminal, or
	// -1 (Linux) or 0 (macOS, Windows) when there is no controlling terminal.
	// It is always 0 on Windows.
	Tpgid int
	// Tty is the device number of the controlling terminal in the platform's
	// dev_t encoding (what stat(2) reports as st_rdev for the terminal), or 0
	// when there is none. It is always 0 on Windows.
	Tty uint64
	// Comm is the command name. On Linux it is the comm field of
	// /proc/<pid>/stat (at most 15 bytes for user processes, and it may
	// contain spaces and ')'); on macOS it is kinfo_proc's p_comm, the
	// executable's name (not its path), at most 16 bytes; on Windows it is the
	// executable's file name with its extension ("cmd.exe"), not its path.
	Comm string
	// Zombie is true for a process that has exited and waits to be reaped: it is in the table
	// but cannot act or be killed. On Windows it is a process that has exited
	// while a handle still holds its process object, listed with no threads
	// (Wine 8.0 does not list such processes at all).
	Zombie bool
}

// ErrNotFound is wrapped by errors about a process that does not exist, or
// exited before it could be read.
var ErrNotFound = errors.New("procinspect: no such process")

// ErrUnsupported is wrapped by every error of a function that has no
// implementation on this operating system.
var ErrUnsupported = errors.New("procinspect: not supported on this operating system")

// Table is a point-in-time copy of the process table. Its methods never touch
// the system, so a Table can be queried repeatedly and from several goroutines.
// A nil *Table behaves as an empty table.
type Table struct {
	procs    []Proc        // sorted by pid, pids unique
	byPid    map[int]int   // pid -> index into procs
	children map[int][]int // ppid -> indexes into procs, in pid order
}

// NewTable builds a Table from procs, for instance a fixture in a test. The
// slice is copied. If a pid occurs more than once, the last entry wins.
func NewTable(procs []Proc) *Table {
	t := &Table{
		procs:    make([]Proc, 0, len(procs)),
		byPid:    make(map[int]int, len(procs)),
		children: make(map[int][]int),
	}
	last := make(map[int]int, len(procs))
	for i, p := range procs {
		last[p.Pid] = i
	}
	for i, p := range procs {
		if last[p.Pid] == i {
			t.procs = append(t.procs, p)
		}
	}
	slices.SortFunc(t.procs, func(a, b Proc) int { return cmp.Compare(a.Pid, b.Pid) })
	for i, p := range t.procs {
		t.byPid[p.Pid] = i
		if p.PPid != p.Pid {
			t.children[p.PPid] = append(t.children[p.PPid], i)
		}
	}
	return t
}

// Procs returns every process in the table, sorted by pid. The slice is a
// copy the caller may keep or modify.
func (t *Table) Procs() []Proc {
	if t == nil {
		return nil
	}
	return slices.Clone(t.procs)
}

// Get returns the process with the given pid, if the table has one.
func (t *Table) Get(pid int) (Proc, bool) {
	if t == nil {
		return Proc{}, false
	}
	i, ok := t.byPid[pid]
	if !ok {
		return Proc{}, false
	}
	return t.procs[i], true
}

// Children returns the direct children of parent, in pid order: processes
// whose PPid is parent.Pid and whose Start is not below parent.Start. The
// start fence drops processes that were children of an earlier holder of the
// same pid. Children does not require parent itself to be in the table; use
// Descendants for a walk that also checks the root's identity.
func (t *Table) Children(parent Identity) []Proc {
	if t == nil {
		return nil
	}
	var out []Proc
	for _, i := range t.children[parent.Pid] {
		if p := t.procs[i]; p.Start >= parent.Start {
			out = append(out, p)
		}
	}
	return out
}

// Descendants returns every process below root, not including root, by
// walking ppid links breadth-first: a process always comes after its parent,
// and siblings come in pid order.
//
// The walk is start-time fenced. Root must be in the table with exactly
// root.Start, otherwise Descendants returns nil (root exited, or its pid now
// names another process). Every process on the way must have a Start not
// below its parent's Start; a process that fails the fence is left out
// together with everything below it.
//
// Processes that were re-parented away from the tree (to init or a subreaper,
// after their parent exited) are not below root any more and are not
// returned; find those by session, group or environment instead.
func (t *Table) Descendants(root Identity) []Proc {
	if t == nil {
		return nil
	}
	r, ok := t.Get(root.Pid)
	if !ok || r.Start != root.Start {
		return nil
	}
	seen := map[int]bool{root.Pid: true}
	var out []Proc
	queue := []Proc{r}
	for len(queue) > 0 {
		parent := queue[0]
		queue = queue[1:]
		for _, i := range t.children[parent.Pid] {
			c := t.procs[i]
			if c.Start < parent.Start || seen[c.Pid] {
				continue
			}
			seen[c.Pid] = true
			out = append(out, c)
			queue = append(queue, c)
		}
	}
	return out
}

// Session returns the members of session sid, in pid order.
func (t *Table) Session(sid int) []Proc {
	return t.filter(func(p *Proc) bool { return p.Sid == sid })
}

// Group returns the members of process group pgid, in pid order.
func (t *Table) Group(pgid int) []Proc {
	return t.filter(func(p *Proc) bool { return p.Pgid == pgid })
}

func (t *Table) filter(keep func(*Proc) bool) []Proc {
	if t == nil {
		return nil
	}
	var out []Proc
	for i := range t.procs {
		if keep(&t.procs[i]) {
			out = append(out, t.procs[i])
		}
	}
	return out
}
