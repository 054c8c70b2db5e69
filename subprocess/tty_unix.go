//go:build unix

package subprocess

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/internal/done"
	"github.com/subkit/subkit/internal/ending"
	"github.com/subkit/subkit/internal/posix"
	"github.com/subkit/subkit/procinspect"
)

// ttyState is what a Handle with a terminal (Spec.TTY) holds besides its tree.
type ttyState struct {
	master *os.File             // see ptyMaster: in the runtime poller, except on darwin
	shell  procinspect.Identity // the program, session leader on the terminal
	cookie *posix.Cookie        // the tree's cookie, carried by what the program starts

	mu   sync.Mutex
	seen map[procinspect.Identity]struct{} // every tree member foreground inspections saw
}

// startTTY opens a pty for h, makes it cmd's stdin, stdout, stderr and controlling terminal
// with the program leading a session of its own, and starts cmd (prepared by the backend),
// applying c. On success h has its tree, pid, terminal and the collector of its output.
func (s *Service) startTTY(h *Handle, cmd *exec.Cmd, c confined, t TTY) error {
	fail := func(err error) error { return &Error{Op: "spawn", Name: h.argv[0], Err: err} }
	ptm, tty, err := pty.Open()
	if err != nil {
		return fail(fmt.Errorf("open pty: %w", err))
	}
	defer tty.Close()
	master, err := ptyMaster(ptm)
	if err != nil {
		return fail(err)
	}
	if err := setSize(master, t.Cols, t.Rows); err != nil {
		master.Close()
		return fail(err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true} // a session leader leads a group too
	c.apply(cmd)
	be := s.backend.(*posixBackend) // the one backend of unix
	tree, cookie, pid, err := be.startTree(cmd)
	if err != nil {
		master.Close()
		return s.startError(h.argv[0], err)
	}
	x := &ttyState{master: master, cookie: cookie, seen: map[procinspect.Identity]struct{}{}}
	x.shell.Pid = pid
	if p, err := procinspect.Lookup(context.Background(), pid); err == nil {
		x.shell = p.Identity
	} else { // the held leader exists: a failed look is the process table's, and is said
		s.log.Warn("the terminal program's start time is unknown; its cleanup is fenced by pid only", "pid", pid, "err", err)
	}
	h.tree, h.pid, h.tty = posixTree{tree}, pid, x
	h.collectors[0] = newCollector(Stdout.String(), Output{TailBytes: t.TailBytes}, nil)
	h.pumpsR[0] = master
	return nil
}

// ptyMaster returns the master to read and write the terminal through, taking over f.
//
// creack/pty leaves the master in blocking mode. Except on macOS a non-blocking duplicate
// joins the runtime poller, so read deadlines and Close can stop a pending Read.
//
// On macOS the master stays blocking and out of the runtime poller: kqueue reports a pty
// master readable when it is not, so a non-blocking master makes reads spin at 100% CPU
// (creack/pty reverted its non-blocking masters for this, creack/pty #174). creack/pty
// hands out a blocking master; should a version hand out a non-blocking one, a blocking
// duplicate replaces it. posix.WithFd leaves the mode as it is, so the resizes and
// foreground-group reads through it do not change it either.
//
// What that costs on macOS: the reading goroutine holds an OS thread while it waits, and
// read deadlines do not apply to a blocking file, so cutting the output (after Terminate, at
// Close) does not stop a pending read, nor does closing the master (creack/pty #88). The
// read ends with end of file or EIO once the last process holding the terminal has closed
// it: at once after a Terminate that ended every process of the terminal; when some process
// the terminal's cleanup did not reach still holds it, Close returns after its bound and
// that one read goes on until the process lets go.
func ptyMaster(f *os.File) (*os.File, error) {
	if runtime.GOOS == "darwin" {
		return blockingMaster(f)
	}
	return polledMaster(f)
}

func polledMaster(f *os.File) (*os.File, error) {
	defer f.Close()
	fd, err := dupMaster(f)
	if err != nil {
		return nil, err
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("pty master non-blocking: %w", err)
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), nil
}

func blockingMaster(f *os.File) (*os.File, error) {
	var flags int
	var ferr error
	if err := posix.WithFd(f, func(fd int) { flags, ferr = unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0) }); err != nil {
		f.Close()
		return nil, fmt.Errorf("pty master: %w", err)
	}
	if ferr != nil {
		f.Close()
		return nil, fmt.Errorf("pty master mode: %w", ferr)
	}
	if flags&unix.O_NONBLOCK == 0 {
		return f, nil // blocking already, so os.NewFile kept it out of the poller
	}
	defer f.Close()
	fd, err := dupMaster(f)
	if err != nil {
		return nil, err
	}
	// O_NONBLOCK belongs to the open file, which the duplicate shares: clearing it here
	// makes the master blocking, and os.NewFile keeps a blocking descriptor out of the
	// poller.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("pty master blocking: %w", err)
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), nil
}

// dupMaster duplicates f's descriptor, close-on-exec.
func dupMaster(f *os.File) (int, error) {
	var fd int
	var derr error
	if err := posix.WithFd(f, func(raw int) { fd, derr = unix.Dup(raw) }); err != nil {
		return -1, fmt.Errorf("pty master: %w", err)
	}
	if derr != nil {
		return -1, fmt.Errorf("dup pty master: %w", derr)
	}
	unix.CloseOnExec(fd)
	return fd, nil
}

func setSize(f *os.File, cols, rows int) error {
	if cols == 0 {
		cols = DefaultCols
	}
	if rows == 0 {
		rows = DefaultRows
	}
	var ierr error
	if err := posix.WithFd(f, func(fd int) {
		ierr = unix.IoctlSetWinsize(fd, unix.TIOCSWINSZ, &unix.Winsize{Col: uint16(cols), Row: uint16(rows)})
	}); err != nil {
		return err
	}
	if ierr != nil {
		return fmt.Errorf("set terminal size %dx%d: %w", cols, rows, ierr)
	}
	return nil
}

func (x *ttyState) write(p []byte) (int, error) { return x.master.Write(p) }

func (x *ttyState) resize(cols, rows int) error { return setSize(x.master, cols, rows) }

func (x *ttyState) foreground(ctx context.Context, name string) (Foreground, error) {
	var pgid int
	var ierr error
	if err := posix.WithFd(x.master, func(fd int) { pgid, ierr = unix.IoctlGetInt(fd, unix.TIOCGPGRP) }); err != nil || ierr != nil {
		return Foreground{}, &Error{Op: "foreground", Name: name, Err: errors.Join(err, ierr),
			Hint: "the terminal has no foreground group once its program has exited"}
	}
	tab, err := procinspect.Snapshot(ctx)
	if err != nil {
		return Foreground{}, &Error{Op: "foreground", Name: name, Err: err}
	}
	tree := tab.Descendants(x.shell)
	if p, ok := tab.Get(x.shell.Pid); ok && p.Identity == x.shell {
		tree = append([]procinspect.Proc{p}, tree...)
	}
	fg := Foreground{Pgid: pgid}
	x.mu.Lock()
	for _, p := range tree {
		if p.Zombie {
			continue
		}
		x.seen[p.Identity] = struct{}{}
		if p.Pgid == pgid {
			fg.Procs = append(fg.Procs, p)
		}
	}
	x.mu.Unlock()
	return fg, nil
}

func (x *ttyState) signalForeground(ctx context.Context, name string, sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok || !validSignal(s) {
		return invalid("signal foreground", name, fmt.Sprintf("%v is not a signal of this OS", sig))
	}
	fg, err := x.foreground(ctx, name)
	if err != nil {
		return err
	}
	for _, p := range fg.Procs {
		if _, err := posix.SignalIdentity(ctx, p.Identity, s); err != nil {
			return &Error{Op: "signal foreground", Name: p.Comm, Err: err}
		}
	}
	return nil
}

// endTTY ends everything a terminal started: it records the program's descendants, its
// session's members, the processes foreground inspections saw and those carrying the tree's
// cookie (by pid and start time), and ends them with the program under the Service's ending
// policy (SIGHUP to the program too, which an interactive shell obeys); once the program is
// gone it records again, for members that re-parented. Nothing is signalled whose start time
// differs from what was recorded. What is still alive after SIGKILL is named in
// Error.Survivors.
func (h *Handle) endTTY() error {
	ctx := context.Background()
	x := h.tty
	ids, rerr := x.record(ctx)
	first := &ttyTarget{h: h, procs: posix.NewProcs(ids)}
	err := errors.Join(rerr, h.svc.ending(h.grace).End(ctx, first))
	left := first.procs.Left()
	if first.again != nil {
		left = append(left, first.again.procs.Left()...)
	}
	if !done.Closed(h.leaderDone) {
		left = append(left, x.shell)
	}
	if len(left) > 0 {
		return survivorsError(h.argv[0], left, err)
	}
	if err != nil {
		return &Error{Op: "terminate", Name: h.argv[0], Err: err}
	}
	h.cutPumps() // what still holds the terminal is not of the tree
	return nil
}

// ttyTarget is what a terminal's Terminate ends: the processes recorded as the terminal's,
// by exact identity, and the program while it runs (SIGHUP too, which an interactive shell
// obeys). Once the first ending is over, the terminal's processes are recorded again: with
// the program gone, whatever is left of its session has re-parented.
type ttyTarget struct {
	h     *Handle
	procs *posix.Procs
	again *ttyTarget // the processes recorded again, once
	later bool       // this is the second record
}

func (t *ttyTarget) Signal(ctx context.Context, s ending.Step) error {
	err := posix.SignalStep(ctx, t.procs.Left(), s)
	if done.Closed(t.h.leaderDone) {
		return err
	}
	shell := []procinspect.Identity{t.h.tty.shell}
	if s == ending.Stop {
		err = errors.Join(err, posix.SignalAll(ctx, shell, unix.SIGHUP))
	}
	return errors.Join(err, posix.SignalStep(ctx, shell, s))
}

// Alive reports whether the program is still to be reaped or a recorded process lives.
func (t *ttyTarget) Alive(ctx context.Context) (bool, error) {
	alive, err := t.procs.Alive(ctx)
	return alive || !done.Closed(t.h.leaderDone), err
}

func (t *ttyTarget) Rediscover(ctx context.Context) (ending.Target, error) {
	if t.later {
		return nil, nil
	}
	ids, err := t.h.tty.record(ctx)
	if len(ids) == 0 {
		return nil, err
	}
	t.again = &ttyTarget{h: t.h, procs: posix.NewProcs(ids), later: true}
	return t.again, err
}

// record lists the live processes that belong to the terminal, the program excluded, with
// the error of a look that failed (what the other looks found is listed all the same).
func (x *ttyState) record(ctx context.Context) ([]procinspect.Identity, error) {
	var errs []error
	ids := map[procinspect.Identity]struct{}{}
	if tab, err := procinspect.Snapshot(ctx); err == nil {
		for _, p := range tab.Descendants(x.shell) {
			ids[p.Identity] = struct{}{}
		}
		for _, p := range tab.Session(x.shell.Pid) {
			if p.Start >= x.shell.Start {
				ids[p.Identity] = struct{}{}
			}
		}
	} else {
		errs = append(errs, err)
	}
	x.mu.Lock()
	for id := range x.seen {
		ids[id] = struct{}{}
	}
	x.mu.Unlock()
	found, err := x.cookie.Find(ctx, 0)
	if err != nil {
		errs = append(errs, err)
	}
	for _, id := range found {
		ids[id] = struct{}{}
	}
	delete(ids, x.shell)
	out := make([]procinspect.Identity, 0, len(ids))
	for id := range ids {
		ok, err := procinspect.Alive(ctx, id)
		if err != nil {
			errs = append(errs, err)
		}
		if ok || err != nil {
			out = append(out, id)
		}
	}
	return out, errors.Join(errs...)
}
