package posix

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/internal/backoff"
	"github.com/subkit/subkit/internal/inspect/linux"
	"github.com/subkit/subkit/procinspect"
)

// census is what c's Finds share (the Table's): the start token and kernel-thread flag of the
// processes of this user seen so far, so that a Find reads the stat file only of processes no
// earlier Find has seen (see linux.Census); of the others it reads only the owner of
// /proc/<pid>. Without a Table, a Find remembers nothing.
func (c *Cookie) census() *linux.Census {
	if c.table != nil {
		return &c.table.census
	}
	return new(linux.Census)
}

// The second look at environments that read empty because their process was in the middle of
// execve: the first pause, doubled at each round, and the most a Find pauses in all. The window
// lasts from the switch to the new program's address space to the set-up of its stack, which
// is microseconds unless loading the program waits for the disk; a process still in it after
// the budget is left to the next Find.
const (
	execFirstPause  = 50 * time.Microsecond
	execPauseBudget = 2 * time.Millisecond
)

func (c *Cookie) find(ctx context.Context, skipPgid int, st *findStats) ([]procinspect.Identity, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("posix: find %s: %w", c.name, err)
	}
	// The owner, the start fence and the kernel-thread flag cost no environment read. Kernel
	// threads are told by PF_KTHREAD, not by a parent pid of 2, which kthreadd itself lacks
	// and which inside a pid namespace names an ordinary process (see
	// linux.Brief.KernelThread): they have no environment, and one that reads empty is what
	// would cost a second look.
	// A member of the skipped group is left out on one getpgid(2), before its stat file or
	// environment is read: at a Terminate those are the whole tree, exiting meanwhile. Should
	// the pid name another process by now, that one is in the skipped group too (and the one
	// the census listed is gone).
	var inSkipped func(pid int) bool
	if skipPgid > 0 {
		inSkipped = func(pid int) bool {
			pgid, err := unix.Getpgid(pid)
			return err == nil && pgid == skipPgid
		}
	}
	procs, err := c.census().Since(os.Getuid(), c.since, inSkipped)
	if err != nil {
		return nil, fmt.Errorf("posix: find %s: %w", c.name, err)
	}
	l := looker{skip: skipPgid, first: []byte(c.name + "="), inner: []byte("\x00" + c.name + "="), st: st}
	var found []procinspect.Identity
	var errs []error
	var execing []linux.Entry
	for _, p := range procs {
		if err := ctx.Err(); err != nil {
			return found, fmt.Errorf("posix: find %s: %w", c.name, err)
		}
		id, v, err := l.look(p)
		switch {
		case err != nil:
			errs = append(errs, err)
		case v == carries:
			found = append(found, id)
		case v == execs:
			execing = append(execing, p)
		}
	}
	// An environment that read empty is looked at again only if its process was in the
	// middle of execve, and all of those share one bounded series of pauses.
	pauses, waited := backoff.Policy{First: execFirstPause, Max: execPauseBudget}.Start(), time.Duration(0)
	for len(execing) > 0 && waited < execPauseBudget {
		st.execing(execing)
		d := min(pauses.Next(), execPauseBudget-waited)
		if err := backoff.Sleep(ctx, d); err != nil {
			return found, fmt.Errorf("posix: find %s: %w", c.name, errors.Join(append(errs, err)...))
		}
		waited += d
		st.pause(d)
		n := 0
		for _, p := range execing {
			id, v, err := l.look(p)
			switch {
			case err != nil:
				errs = append(errs, err)
			case v == carries:
				found = append(found, id)
			case v == execs:
				execing[n] = p
				n++
			}
		}
		execing = execing[:n]
	}
	if len(errs) > 0 {
		return found, fmt.Errorf("posix: find %s: %w", c.name, errors.Join(errs...))
	}
	return found, nil
}

// verdict is what one look at a process concluded.
type verdict int

const (
	lacks   verdict = iota // does not carry the cookie, or is out of the question (any more)
	carries                // carries the cookie
	execs                  // read empty in the middle of execve: worth another look
)

// looker looks at the candidates of one Find.
type looker struct {
	skip         int
	first, inner []byte // "NAME=" and "\x00NAME="
	buf          []byte // environment buffer, reused
	st           *findStats
}

// look reads the environment of a process the census listed (of this user, no kernel thread,
// not older than the cookie), and the stat file only when the environment carries the cookie
// or reads empty: to tell that the pid still names the process the census listed, its group
// and whether it has exited, and whether an empty environment is worth another look. The
// identity is the census's, taken before the environment was read, so it never names a
// process that got the pid afterwards.
//
// Errors that mean the process is gone or not readable by this user are no errors here.
func (l *looker) look(e linux.Entry) (procinspect.Identity, verdict, error) {
	id := procinspect.Identity{Pid: e.Pid, Start: e.StartTime}
	l.st.environRead(e.Pid)
	var err error
	l.buf, err = linux.AppendEnviron(l.buf[:0], e.Pid)
	if err != nil {
		return id, lacks, expected(err)
	}
	carrying := bytes.HasPrefix(l.buf, l.first) || bytes.Contains(l.buf, l.inner)
	if len(l.buf) > 0 && !carrying {
		return id, lacks, nil
	}
	b, err := linux.ReadBrief(e.Pid)
	if err != nil {
		return id, lacks, expected(err)
	}
	if b.StartTime != e.StartTime || b.Zombie() || b.Pgrp == l.skip {
		return id, lacks, nil
	}
	if carrying {
		return id, carries, nil
	}
	// An empty environment: the process was started with none, or it is in the middle of
	// execve (the new program's environment is not in place yet), or it is exiting. Only the
	// middle of execve is worth another look.
	if b.EnvReady() && b.EnvStart == b.EnvEnd {
		return id, lacks, nil
	}
	return id, execs, nil
}

// expected drops the errors that mean a process is gone (it exited, or has no address space
// any more) or may not be read by this user (it changed user, or a security module says no).
func expected(err error) error {
	if linux.IsNotExist(err) || errors.Is(err, fs.ErrPermission) {
		return nil
	}
	return err
}

func (s *findStats) environRead(pid int) {
	if s == nil {
		return
	}
	if s.environReads == nil {
		s.environReads = map[int]int{}
	}
	s.environReads[pid]++
}

func (s *findStats) execing(es []linux.Entry) {
	if s != nil {
		for _, e := range es {
			s.relooked = append(s.relooked, e.Pid)
		}
	}
}

func (s *findStats) pause(d time.Duration) {
	if s != nil {
		s.paused += d
	}
}

// startTokenNow is the start token (/proc/<pid>/stat starttime: clock ticks of CLOCK_BOOTTIME,
// at USER_HZ, which Linux fixes at 100 for /proc) a process started now would get, rounded
// down, so every process started later has a token at least as large. It costs no /proc read.
func startTokenNow() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return 0 // no fence rather than a wrong one
	}
	return uint64(ts.Nano()) / (1e9 / 100)
}
