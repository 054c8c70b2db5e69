//go:build unix

package subprocess

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/internal/ending"
	"github.com/subkit/subkit/internal/posix"
	"github.com/subkit/subkit/procinspect"
	"github.com/subkit/subkit/sandbox"
)

// Terminal is a program running on a pty of its own, as session leader. All methods are
// safe for concurrent use.
type Terminal struct {
	svc    *Service
	argv   []string
	grace  time.Duration
	start  time.Time
	shell  procinspect.Identity
	cookie *posix.Cookie
	master *os.File // see ptyMaster: in the runtime poller, except on darwin
	out    *collector
	tree   *posix.Tree // the program's exit, without a thread blocked on it
	// how the program is confined, or nil; under mu once the program has ended (the
	// allow-list's refusals are added then)
	sandbox *sandbox.Report
	proxy   *allowProxy // the sandbox's allow-list proxy, ended with the program, or nil

	leaderDone chan struct{}
	settledCh  chan struct{}
	endedCh    chan struct{} // closed once the Terminal has left the Service's live set
	result     TerminalResult

	mu   sync.Mutex
	seen map[procinspect.Identity]struct{} // every tree member foreground inspections saw

	term memo

	closeOnce sync.Once
	closeErr  error
}

func startTerminal(s *Service, path, dir string, env []string, spec TerminalSpec) (*Terminal, error) {
	fail := func(err error) error {
		return &Error{Op: "spawn terminal", Name: spec.Path, Err: err}
	}
	ptm, tty, err := pty.Open()
	if err != nil {
		return nil, fail(fmt.Errorf("open pty: %w", err))
	}
	defer tty.Close()
	// How the master is read depends on the OS: see ptyMaster (terminal_master_unix.go,
	// terminal_darwin.go).
	master, err := ptyMaster(ptm)
	if err != nil {
		return nil, fail(err)
	}
	if err := setSize(master, spec.Cols, spec.Rows); err != nil {
		master.Close()
		return nil, fail(err)
	}
	argv := append([]string{spec.Path}, spec.Args...)
	c, err := s.confine("spawn terminal", spec.Sandbox, path, argv, env, dir, true, spec.Readable)
	if err != nil {
		master.Close()
		return nil, err
	}
	report := c.report
	cmd := &exec.Cmd{
		Path: c.path, Args: c.args, Dir: dir, Env: c.env,
		Stdin: tty, Stdout: tty, Stderr: tty,
	}
	be := s.backend.(*posixBackend) // the one backend of unix
	be.prepare(cmd)                 // the Service's and the tree's cookies
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	c.apply(cmd)
	tree, cookie, pid, err := be.startTree(cmd) // a session leader leads a group of its own too
	if err != nil {
		master.Close()
		c.abandon(s)
		return nil, s.startError(spec.Path, err)
	}
	ctx := context.Background()
	t := &Terminal{
		svc: s, argv: argv, grace: spec.Grace, start: time.Now(), sandbox: report, proxy: c.proxy,
		master: master, out: newCollector("terminal", Output{TailBytes: spec.TailBytes}, nil),
		tree: tree, cookie: cookie,
		leaderDone: make(chan struct{}), settledCh: make(chan struct{}), endedCh: make(chan struct{}),
		seen: map[procinspect.Identity]struct{}{},
	}
	t.shell.Pid = pid
	if p, err := procinspect.Lookup(ctx, pid); err == nil {
		t.shell = p.Identity
	}
	go t.out.pump(master, true)
	go t.run()
	return t, nil
}

func setSize(f *os.File, cols, rows int) error {
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

// run waits for the program, lets the output drain within the grace, and settles. The
// output is read on after that while other processes hold the terminal, until they let go of
// it or Terminate or Close ends them; then the Terminal leaves the Service's live set.
func (t *Terminal) run() {
	<-t.tree.Exited()
	exit, err := t.tree.Exit()
	close(t.leaderDone)
	drain := time.NewTimer(t.grace)
	select {
	case <-t.out.done:
	case <-drain.C:
	}
	drain.Stop()
	r := TerminalResult{Pid: t.shell.Pid, ExitCode: exit.Code, ExitErr: err, Duration: time.Since(t.start)}
	if exit.Signal != 0 {
		r.Signal = unix.SignalName(exit.Signal)
	}
	t.result = r
	if t.proxy != nil { // the program has ended, and its network namespace with it
		rep := t.proxy.end(t.svc.log, t.sandbox)
		t.mu.Lock()
		t.sandbox = rep
		t.mu.Unlock()
	}
	close(t.settledCh)

	<-t.out.done
	<-t.tree.Gone()
	t.svc.forget(t)
	close(t.endedCh)
}

// Pid is the program's pid; it leads the terminal's session.
func (t *Terminal) Pid() int {
	if t.valid("pid") != nil {
		return 0
	}
	return t.shell.Pid
}

// Identity is the program's exact identity.
func (t *Terminal) Identity() procinspect.Identity {
	if t.valid("identity") != nil {
		return procinspect.Identity{}
	}
	return t.shell
}

// Write sends p to the terminal as typed input.
func (t *Terminal) Write(p []byte) (int, error) {
	if err := t.valid("write terminal"); err != nil {
		return 0, err
	}
	n, err := t.master.Write(p)
	if err != nil {
		return n, &Error{Op: "write terminal", Name: t.argv[0], Err: err}
	}
	return n, nil
}

// ReadOutput reads the screen output from offset from, in the same whole-stream coordinates
// as Handle.ReadOutput. The text is UTF-8: a character split across pty reads is delivered
// whole, invalid bytes become U+FFFD, and a read never starts inside a character.
//
// A read ends on a character boundary too, so its Next is always one; a max below
// utf8.UTFMax is taken as utf8.UTFMax, so a read can always return a whole character.
func (t *Terminal) ReadOutput(from int64, max int) (Delta, error) {
	if err := t.valid("read terminal"); err != nil {
		return Delta{}, err
	}
	if max > 0 && max < utf8.UTFMax {
		max = utf8.UTFMax
	}
	d, err := t.out.read(from, max)
	if err != nil {
		return d, err
	}
	for len(d.Data) > 0 && !utf8.RuneStart(d.Data[0]) { // begun inside a character: skip its rest
		d.Data = d.Data[1:]
		d.From++
		d.Dropped++
	}
	if d.Next < d.Total { // cut by max: end before a character the cut would split
		if i := lastRuneStart(d.Data); i >= 0 && !utf8.FullRune(d.Data[i:]) {
			d.Data = d.Data[:i]
		}
	}
	d.Next = d.From + int64(len(d.Data))
	d.Done = d.Done && d.Next == d.Total
	return d, nil
}

// lastRuneStart is the index of the last byte of p that starts a character, or -1.
func lastRuneStart(p []byte) int {
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax; i-- {
		if utf8.RuneStart(p[i]) {
			return i
		}
	}
	return -1
}

// Updated returns a channel that is closed when output arrives after the call, or the
// output ends. Output that arrived before the call does not close it: take the channel before
// the ReadOutput it follows, or use WaitOutput, which does.
func (t *Terminal) Updated() <-chan struct{} {
	if t.valid("updated") != nil {
		return nil
	}
	return t.out.updated()
}

// Sandbox says which backend confined the terminal's program and what it could not enforce;
// nil when it runs unconfined.
func (t *Terminal) Sandbox() *sandbox.Report {
	if t.valid("sandbox") != nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sandbox
}

// WaitOutput waits until the terminal has output past offset from, or its output has ended,
// and then reads from there as ReadOutput does; it returns ctx's error (with an empty read)
// when ctx ends first. It never misses output, however it races with the program.
func (t *Terminal) WaitOutput(ctx context.Context, from int64, max int) (Delta, error) {
	if err := t.valid("wait terminal output"); err != nil {
		return Delta{}, err
	}
	if err := checkCtx("wait terminal output", "", ctx); err != nil {
		return Delta{}, err
	}
	return waitRead(ctx, t.out, t.ReadOutput, from, max)
}

// Resize changes the terminal size; the foreground program gets SIGWINCH.
func (t *Terminal) Resize(cols, rows int) error {
	if err := t.valid("resize terminal"); err != nil {
		return err
	}
	if cols <= 0 || rows <= 0 || cols > 0xffff || rows > 0xffff {
		return invalid("resize terminal", t.argv[0], fmt.Sprintf("size %dx%d is out of range 1..65535", cols, rows))
	}
	if err := setSize(t.master, cols, rows); err != nil {
		return &Error{Op: "resize terminal", Name: t.argv[0], Err: err}
	}
	return nil
}

// Foreground reports the terminal's foreground process group and its members within the
// tree rooted at the program. Every tree member it sees is remembered, so Terminate can
// still end it after it re-parents.
func (t *Terminal) Foreground(ctx context.Context) (Foreground, error) {
	if err := t.valid("foreground"); err != nil {
		return Foreground{}, err
	}
	if err := checkCtx("foreground", t.argv[0], ctx); err != nil {
		return Foreground{}, err
	}
	var pgid int
	var ierr error
	if err := posix.WithFd(t.master, func(fd int) { pgid, ierr = unix.IoctlGetInt(fd, unix.TIOCGPGRP) }); err != nil || ierr != nil {
		return Foreground{}, &Error{Op: "foreground", Name: t.argv[0], Err: errors.Join(err, ierr),
			Hint: "the terminal has no foreground group once its program has exited"}
	}
	tab, err := procinspect.Snapshot(ctx)
	if err != nil {
		return Foreground{}, &Error{Op: "foreground", Name: t.argv[0], Err: err}
	}
	tree := tab.Descendants(t.shell)
	if p, ok := tab.Get(t.shell.Pid); ok && p.Identity == t.shell {
		tree = append([]procinspect.Proc{p}, tree...)
	}
	fg := Foreground{Pgid: pgid}
	t.mu.Lock()
	for _, p := range tree {
		if p.Zombie {
			continue
		}
		t.seen[p.Identity] = struct{}{}
		if p.Pgid == pgid {
			fg.Procs = append(fg.Procs, p)
		}
	}
	t.mu.Unlock()
	return fg, nil
}

// SignalForeground sends sig to the members of the foreground group (Ctrl-C is SIGINT),
// identity-fenced; the program itself is signalled only when it is in the foreground.
func (t *Terminal) SignalForeground(ctx context.Context, sig os.Signal) error {
	if err := t.valid("signal foreground"); err != nil {
		return err
	}
	if err := checkCtx("signal foreground", t.argv[0], ctx); err != nil {
		return err
	}
	s, ok := sig.(syscall.Signal)
	if !ok || !validSignal(s) {
		return invalid("signal foreground", t.argv[0], fmt.Sprintf("%v is not a signal of this OS", sig))
	}
	fg, err := t.Foreground(ctx)
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

// Done is closed once the program has exited and its output has drained (or the grace ran
// out because other processes still hold the terminal).
func (t *Terminal) Done() <-chan struct{} {
	if t.valid("done") != nil {
		return closedChan()
	}
	return t.settledCh
}

// Wait returns how the program ended, or ctx's error first.
func (t *Terminal) Wait(ctx context.Context) (TerminalResult, error) {
	if err := t.valid("wait terminal"); err != nil {
		return TerminalResult{}, err
	}
	if err := checkCtx("wait terminal", t.argv[0], ctx); err != nil {
		return TerminalResult{}, err
	}
	select {
	case <-t.settledCh:
		return t.result, nil
	case <-ctx.Done():
		return TerminalResult{}, &Error{Op: "wait terminal", Name: t.argv[0], Err: ctx.Err()}
	}
}

// Terminate ends everything the terminal started: it records the program's descendants,
// its session's members, the processes foreground inspections saw and those carrying the
// terminal's cookie (by pid and start time), asks them to stop (SIGTERM, and SIGHUP to the
// program, which an interactive shell obeys), forces what is left after the grace (SIGKILL),
// and once the program is gone looks again for members that re-parented, which are ended the
// same way with what is left of the grace. Nothing is signalled whose start time differs
// from what was recorded. It returns once all of them are gone or ctx ends, and a
// *TerminateError naming the survivors otherwise (joined, when a signal or a look at the
// process table failed too, with that error: use errors.As). Concurrent calls share one run;
// a call after a successful one returns at once.
func (t *Terminal) Terminate(ctx context.Context) error {
	if err := t.valid("terminate terminal"); err != nil {
		return err
	}
	if err := checkCtx("terminate terminal", t.argv[0], ctx); err != nil {
		return err
	}
	return t.term.run(ctx, t.escalate, "terminate terminal", t.argv[0])
}

func (t *Terminal) escalate() error {
	ctx := context.Background()
	ids, rerr := t.record(ctx)
	first := &termTarget{t: t, procs: posix.NewProcs(ids)}
	err := errors.Join(rerr, t.svc.ending(t.grace).End(ctx, first))
	left := first.procs.Left()
	if first.again != nil {
		left = append(left, first.again.procs.Left()...)
	}
	if len(left) > 0 || !isClosed(t.leaderDone) {
		if !isClosed(t.leaderDone) {
			left = append(left, t.shell)
		}
		if err != nil {
			return errors.Join(&TerminateError{Survivors: left}, err)
		}
		return &TerminateError{Survivors: left}
	}
	if err != nil {
		return &Error{Op: "terminate terminal", Name: t.argv[0], Err: err}
	}
	t.svc.cutOutput(t.master) // what still holds the terminal is not of the tree
	return nil
}

// termTarget is what a Terminal's Terminate ends: the processes recorded as the terminal's,
// by exact identity, and the program while it runs (SIGHUP too, which an interactive shell
// obeys). Once the first ending is over, the terminal's processes are recorded again: with
// the program gone, whatever is left of its session has re-parented.
type termTarget struct {
	t     *Terminal
	procs *posix.Procs
	again *termTarget // the processes recorded again, once
	later bool        // this is the second record
}

func (x *termTarget) Signal(ctx context.Context, s ending.Step) error {
	err := posix.SignalStep(ctx, x.procs.Left(), s)
	if isClosed(x.t.leaderDone) {
		return err
	}
	shell := []procinspect.Identity{x.t.shell}
	if s == ending.Stop {
		err = errors.Join(err, posix.SignalAll(ctx, shell, unix.SIGHUP))
	}
	return errors.Join(err, posix.SignalStep(ctx, shell, s))
}

// Alive reports whether the program is still to be reaped or a recorded process lives.
func (x *termTarget) Alive(ctx context.Context) (bool, error) {
	alive, err := x.procs.Alive(ctx)
	return alive || !isClosed(x.t.leaderDone), err
}

func (x *termTarget) Rediscover(ctx context.Context) (ending.Target, error) {
	if x.later {
		return nil, nil
	}
	ids, err := x.t.record(ctx)
	if len(ids) == 0 {
		return nil, err
	}
	x.again = &termTarget{t: x.t, procs: posix.NewProcs(ids), later: true}
	return x.again, err
}

// record lists the live processes that belong to the terminal, the program excluded, with
// the error of a look that failed (what the other looks found is listed all the same).
func (t *Terminal) record(ctx context.Context) ([]procinspect.Identity, error) {
	var errs []error
	ids := map[procinspect.Identity]struct{}{}
	if tab, err := procinspect.Snapshot(ctx); err == nil {
		for _, p := range tab.Descendants(t.shell) {
			ids[p.Identity] = struct{}{}
		}
		for _, p := range tab.Session(t.shell.Pid) {
			if p.Start >= t.shell.Start {
				ids[p.Identity] = struct{}{}
			}
		}
	} else {
		errs = append(errs, err)
	}
	t.mu.Lock()
	for id := range t.seen {
		ids[id] = struct{}{}
	}
	t.mu.Unlock()
	found, err := t.cookie.Find(ctx, 0)
	if err != nil {
		errs = append(errs, err)
	}
	for _, id := range found {
		ids[id] = struct{}{}
	}
	delete(ids, t.shell)
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

// Close terminates whatever the terminal started, waits for the result, and releases the
// pty. It is safe to call more than once.
func (t *Terminal) Close() error {
	if err := t.valid("close terminal"); err != nil {
		return err
	}
	t.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*t.grace+ending.KillWait)
		defer cancel()
		t.closeErr = t.end(ctx, true)
		select {
		case <-t.endedCh:
		case <-ctx.Done():
		}
	})
	return t.closeErr
}

func (t *Terminal) ended() <-chan struct{} { return t.endedCh }

// end terminates whatever the terminal started and stops reading its output.
func (t *Terminal) end(ctx context.Context, _ bool) error {
	err := t.Terminate(ctx)
	t.svc.cutOutput(t.master)
	return err
}

// valid reports whether t was made by SpawnTerminal; otherwise it returns the error for op.
func (t *Terminal) valid(op string) error {
	if t == nil || t.svc == nil {
		return &Error{Op: op, Kind: ErrInvalid, Err: errors.New("the Terminal was not returned by SpawnTerminal"),
			Hint: "use the *Terminal that Service.SpawnTerminal returned"}
	}
	return nil
}
