package subprocess

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/subkit/subkit/internal/done"
	"github.com/subkit/subkit/internal/ending"
	"github.com/subkit/subkit/procinspect"
	"github.com/subkit/subkit/sandbox"
)

// Result is how a spawned tree ended: a snapshot taken when the Handle settles. Streams that
// daemons still hold go on after it (see Handle.ReadOutput).
type Result struct {
	Pid int
	// Outcome is how the leader ended: its status or signal, TimedOut (Spec.Timeout),
	// Cancelled (Terminate, Close or Service.Close before the result settled), Duration,
	// PipesHeld and Sandbox.
	Outcome
	Usage Usage // the leader's CPU time and peak memory, where the OS tells
	// StdinErr is the error Spec.Stdin's Reader returned (not io.EOF), when the copy had
	// ended by settlement; a child that exits without reading all of its stdin is no error.
	StdinErr error
	// Stdout and Stderr are zero unless the stream was collected: the stream as it stood at
	// settlement. A terminal's output is Stdout.
	Stdout, Stderr StreamResult
}

// Handle is one spawned process tree, with pipes or on a terminal of its own (Spec.TTY, for
// which Write, Resize, Foreground and SignalForeground work). All methods are safe for
// concurrent use. Methods of a zero or nil Handle return an error wrapping ErrInvalid (or a
// zero value) and never block.
type Handle struct {
	svc   *Service
	argv  []string
	pid   int
	grace time.Duration
	drain time.Duration
	start time.Time
	tree  tree

	stdin          *os.File // the caller's pipe end (InputPipe)
	stdout, stderr *os.File // the caller's pipe ends (Pipe)
	collectors     [2]*collector
	spill          *spillPlace     // where the collectors' spill files go
	sandbox        *sandbox.Report // how the tree is confined, or nil
	proxy          *allowProxy     // the sandbox's allow-list proxy, ended with the Result, or nil
	pumpsR         [2]*os.File     // read ends the pumps own, for cutting them
	pumpsDone      chan struct{}   // closed when every pump has returned
	feed           *feeder         // the stdin copy (InputBytes, InputReader), or nil
	feedW          *os.File        // the pipe it writes to
	tty            *ttyState       // the terminal (Spec.TTY), or nil

	leaderDone chan struct{} // closed once the leader has exited
	settledCh  chan struct{} // closed once result is final
	endedCh    chan struct{} // closed once the Handle has left the Service's live set
	result     Result
	cancelled  atomic.Bool // the caller asked to end the tree before the result settled

	term memo

	closeOnce sync.Once
	closeErr  error
}

// Pid is the leader's process id (also the process group id on POSIX).
func (h *Handle) Pid() int {
	if h == nil {
		return 0
	}
	return h.pid
}

// valid reports whether h was made by Spawn; otherwise it returns the error for op.
func (h *Handle) valid(op string) error {
	if h == nil || h.svc == nil {
		return &Error{Op: op, Kind: ErrInvalid, Err: errors.New("the Handle was not returned by Spawn"),
			Hint: "use the *Handle that Service.Spawn returned"}
	}
	return nil
}

// SpillDir is the private directory that holds the handle's spill files (the Service's, or
// the one made in Spec.SpillDir), or "" while none has been needed. Its files outlive the
// handle and the Service; their owner removes them.
func (h *Handle) SpillDir() string {
	if h.valid("spill dir") != nil {
		return ""
	}
	return h.spill.path()
}

// Argv is the argument vector the leader was started with.
func (h *Handle) Argv() []string {
	if h.valid("argv") != nil {
		return nil
	}
	return append([]string(nil), h.argv...)
}

// Stdin is the write end of the child's stdin when Spec.Stdin is InputPipe, else nil. Close
// it to send end-of-file. A program on a terminal (Spec.TTY) reads what Write types.
func (h *Handle) Stdin() io.WriteCloser {
	if h.valid("stdin") != nil {
		return nil
	}
	return nilIfNone(h.stdin)
}

// Stdout is the read end of the child's stdout when its disposition is Pipe, else nil.
func (h *Handle) Stdout() io.ReadCloser {
	if h.valid("stdout") != nil {
		return nil
	}
	return nilIfNone(h.stdout)
}

// Stderr is the read end of the child's stderr when its disposition is Pipe, else nil.
func (h *Handle) Stderr() io.ReadCloser {
	if h.valid("stderr") != nil {
		return nil
	}
	return nilIfNone(h.stderr)
}

func nilIfNone(f *os.File) interface {
	io.ReadWriteCloser
} {
	if f == nil {
		return nil
	}
	return f
}

// Done is closed when the result is final: the leader has exited and the collected streams
// have drained (or the drain grace has run out). For a Handle not made by Spawn it is
// closed already.
func (h *Handle) Done() <-chan struct{} {
	if h.valid("done") != nil {
		return closedChan()
	}
	return h.settledCh
}

func closedChan() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

// Wait returns the result once the handle settles, or ctx's error first. It does not end the
// tree: pair it with Terminate, or set Spec.Timeout, to bound it.
func (h *Handle) Wait(ctx context.Context) (Result, error) {
	if err := h.valid("wait"); err != nil {
		return Result{}, err
	}
	if err := checkCtx("wait", h.argv[0], ctx); err != nil {
		return Result{}, err
	}
	select {
	case <-h.settledCh:
		return h.result, nil
	case <-ctx.Done():
		return Result{}, &Error{Op: "wait", Name: h.argv[0], Err: ctx.Err()}
	}
}

// WaitForExit returns once no member of the tree is left (the leader and every process still
// in its group, and on Linux the processes Terminate found outside it), or with ctx's error.
// It lets a consumer's teardown confirm all is quiet.
func (h *Handle) WaitForExit(ctx context.Context) error {
	if err := h.valid("wait for exit"); err != nil {
		return err
	}
	if err := checkCtx("wait for exit", h.argv[0], ctx); err != nil {
		return err
	}
	if err := h.waitTree(ctx); err != nil {
		return &Error{Op: "wait for exit", Name: h.argv[0], Err: err}
	}
	return nil
}

func (h *Handle) waitTree(ctx context.Context) error {
	select {
	case <-h.leaderDone:
	case <-ctx.Done():
		return ctx.Err()
	}
	return h.tree.waitGone(ctx)
}

// Signal sends sig to the whole tree (the process group on POSIX, falling back to the
// leader). A tree already gone is not an error; a signal this OS does not have is ErrInvalid.
func (h *Handle) Signal(sig os.Signal) error {
	if err := h.valid("signal"); err != nil {
		return err
	}
	if sig == nil {
		return invalid("signal", h.argv[0], "no signal given")
	}
	if err := h.tree.signal(sig); err != nil {
		e := &Error{Op: "signal", Name: h.argv[0], Err: err}
		if errors.Is(err, ErrInvalid) {
			e.Kind = ErrInvalid
		}
		return e
	}
	return nil
}

// Terminate ends the tree: SIGTERM to every member, then SIGKILL to whatever is left after
// the grace. Members are the process group (held safe to signal by its unreaped leader, so a
// member that cleared its environment is reached too) and, on Linux, the processes that left
// it but carry the tree's cookie (setsid daemons, double forks), found by a sweep of the
// process table even when the group itself is already gone. Once they are gone it stops
// reading the collected streams (what the pipes hold is still read), so the Handle lets go of
// them. It returns once all of them are gone, or with ctx's error (the escalation still runs
// to its end in the background). Concurrent calls share one escalation; a call after a
// successful one returns at once. A tree still present well after SIGKILL is an error of
// kind ErrSystem.
//
// A program on a terminal (Spec.TTY) leads a session, whose members need not stay in its
// group, so its tree is taken by exact identity (pid and start time) instead: the program's
// descendants, its session's members, every process Foreground saw and, on Linux, those
// carrying the tree's cookie. The program is asked to stop with SIGHUP too, which an
// interactive shell obeys. Once the program is gone its session is recorded again, for
// members that re-parented, which are ended the same way. Nothing is signalled whose start
// time differs from what was recorded. The error names what survived SIGKILL in
// Error.Survivors (joined with the failure of a signal or a look at the process table, if
// any).
func (h *Handle) Terminate(ctx context.Context) error {
	if err := h.valid("terminate"); err != nil {
		return err
	}
	if err := checkCtx("terminate", h.argv[0], ctx); err != nil {
		return err
	}
	h.cancelRequested()
	return h.terminate(ctx)
}

// terminate is Terminate without recording a cancellation: the timeout's.
func (h *Handle) terminate(ctx context.Context) error {
	return h.term.run(ctx, func() error { return h.escalate(true) }, "terminate", h.argv[0])
}

// cancelRequested records, for Result.Cancelled, that the caller asked to end the tree: only
// while the result is open (the leader runs, or its output drains).
func (h *Handle) cancelRequested() {
	if !done.Closed(h.leaderDone) || !done.Closed(h.pumpsDone) {
		h.cancelled.Store(true)
	}
}

// escalate ends the tree under the Service's ending policy. With sweep, it also ends the
// processes that left the group but carry the tree's cookie, even when the group itself is
// gone (a read of the process table each time), and then those that escapees started while
// they were being ended; Service.Close goes without, and sweeps once for all its trees.
func (h *Handle) escalate(sweep bool) error {
	if h.tty != nil {
		return h.endTTY()
	}
	if err := h.svc.ending(h.grace).End(context.Background(), treeTarget{h, sweep}); err != nil {
		return &Error{Op: "terminate", Name: h.argv[0], Err: err}
	}
	h.cutPumps() // what still holds the pipes is not of the tree
	return nil
}

// treeTarget is a Handle's tree as an ending.Target; its end is learnt from events (the
// leader's exit, then the group's watch).
type treeTarget struct {
	h     *Handle
	sweep bool
}

func (t treeTarget) Signal(_ context.Context, s ending.Step) error {
	if s == ending.Kill {
		return t.h.tree.kill(t.sweep)
	}
	return t.h.tree.term(t.sweep)
}

func (t treeTarget) Alive(context.Context) (bool, error) {
	return !done.Closed(t.h.leaderDone) || t.h.tree.alive(), nil
}

func (t treeTarget) WaitGone(ctx context.Context) error { return t.h.waitTree(ctx) }

func (t treeTarget) Rediscover(ctx context.Context) (ending.Target, error) {
	if !t.sweep {
		return nil, nil
	}
	return t.h.tree.rediscover(ctx)
}

// cutPumps makes every pump return once it has read what its pipe holds.
func (h *Handle) cutPumps() {
	for _, r := range h.pumpsR {
		h.svc.cutOutput(r)
	}
}

// Members lists the processes of the tree alive now, as exact identities with their parent,
// group and session: on POSIX the members of its process group (until the group has been seen
// empty) and, on Linux, processes that left the group but carry the tree's cookie. After the
// result settles it tells whether daemons outlived the leader. Windows: ErrUnsupported.
func (h *Handle) Members(ctx context.Context) ([]procinspect.Proc, error) {
	if err := h.valid("members"); err != nil {
		return nil, err
	}
	if err := checkCtx("members", h.argv[0], ctx); err != nil {
		return nil, err
	}
	procs, err := h.tree.members(ctx)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.Name = h.argv[0]
			return procs, e
		}
		return procs, &Error{Op: "members", Name: h.argv[0], Err: err}
	}
	return procs, nil
}

// ReadOutput reads a collected stream from offset from (whole-stream byte coordinates), at most
// max bytes (all that is available when max <= 0). Bytes the tail no longer holds come from the
// spill file while it exists; otherwise they are reported as Dropped. The handle keeps no
// cursor: any number of readers may read from any offset, before and after settlement. After
// settlement a stream that daemons still hold keeps growing (Result.PipesHeld) until they close
// it or Terminate or Close ends them: the Result is the snapshot, ReadOutput the stream.
//
// A terminal's output (Spec.TTY) is the Stdout stream, read as UTF-8 text: a read never
// starts inside a character (the rest of one it would begin in is skipped and counted as
// Dropped) and ends on a character boundary too, so its Next is always one; a max below
// utf8.UTFMax is taken as utf8.UTFMax, so a read can always return a whole character.
func (h *Handle) ReadOutput(s Stream, from int64, max int) (Delta, error) {
	if err := h.valid("read output"); err != nil {
		return Delta{}, err
	}
	if s != Stdout && s != Stderr {
		return Delta{}, invalid("read output", s.String(), "stream must be Stdout or Stderr")
	}
	c := h.collectors[s-1]
	if c == nil && h.tty != nil {
		return Delta{}, invalid("read output", s.String(), "a terminal's output is all in Stdout")
	}
	if c == nil {
		return Delta{}, invalid("read output", s.String(), "the stream's disposition is not Collect")
	}
	if h.tty != nil {
		return readText(c, from, max)
	}
	return c.read(from, max)
}

// Sandbox says which backend confined the tree and what it could not enforce (what the
// Result's Sandbox will say, before the result settles); nil for a tree that runs
// unconfined.
func (h *Handle) Sandbox() *sandbox.Report {
	if h.valid("sandbox") != nil {
		return nil
	}
	if done.Closed(h.settledCh) { // with the allow-list's refusals, once the program has ended
		return h.result.Sandbox
	}
	return h.sandbox
}

// Updated returns a channel that is closed when stream s receives bytes after the call, or
// ends; it is nil when s is not collected. Bytes that arrived before the call do not close it:
// take the channel before the ReadOutput it follows, or use WaitOutput, which does.
func (h *Handle) Updated(s Stream) <-chan struct{} {
	if h.valid("updated") != nil || s != Stdout && s != Stderr || h.collectors[s-1] == nil {
		return nil
	}
	return h.collectors[s-1].updated()
}

// Close terminates the tree if anything of it is still alive, waits for the result to settle,
// stops reading the collected streams and closes every descriptor the handle handed out
// (Stdin, Stdout, Stderr pipes). Spill files are kept. It does not sweep for processes that
// left a group already gone: Terminate and Service.Close do. It is safe to call more than once.
func (h *Handle) Close() error {
	if err := h.valid("close"); err != nil {
		return err
	}
	h.closeOnce.Do(func() {
		bound := h.grace + ending.KillWait + h.drain
		if h.tty != nil { // a terminal's cleanup has a second round within the grace
			bound = max(bound, 2*h.grace+ending.KillWait)
		}
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		h.cancelRequested()
		h.closeErr = h.end(ctx, true)
		select {
		case <-h.endedCh:
		case <-ctx.Done():
		}
		for _, f := range []*os.File{h.stdin, h.stdout, h.stderr} {
			if f != nil {
				f.Close()
			}
		}
	})
	return h.closeErr
}

// run waits for the leader, drains, settles, and then follows the streams and the tree until
// both are gone. It is the handle's one long-lived goroutine; it holds no OS thread.
func (h *Handle) run(timeout time.Duration) {
	var timeoutC <-chan time.Time
	if timeout > 0 {
		c, stop := h.svc.timer(timeout)
		defer stop()
		timeoutC = c
	}
	timedOut := false
	onTimeout := func() {
		timedOut, timeoutC = true, nil
		go h.terminate(context.Background()) // not the caller's: no Cancelled
	}
	select {
	case <-h.tree.exited():
	case <-timeoutC:
		select {
		case <-h.tree.exited(): // it exited on its own as the timer fired
			timeoutC = nil
		default:
			onTimeout()
		}
		<-h.tree.exited()
	}
	exit := h.tree.exit()
	close(h.leaderDone)

	// Bounded drain: descendants may hold the pipes open. The timeout bounds it too.
	drain := time.NewTimer(h.drain)
	held := false
wait:
	for {
		select {
		case <-h.pumpsDone:
			break wait
		case <-drain.C:
			held = true
			break wait
		case <-timeoutC:
			select {
			case <-h.pumpsDone: // drained as the timer fired: the leader ended on its own
				break wait
			default:
				onTimeout() // Terminate ends the holders, then stops reading
			}
		}
	}
	cancelled := h.cancelled.Load() && !timedOut // read as the result settles: a later request is too late
	teeWait := !held
	for _, c := range h.collectors {
		if teeWait && c != nil && c.tee != nil {
			select {
			case <-c.tee.done:
			case <-drain.C:
				teeWait = false // a Tee still writing when the grace runs out finishes on its own
			}
		}
	}
	drain.Stop()
	var stdinErr error
	if h.feed != nil {
		reading := h.feed.stop()
		h.feedW.Close() // unblocks a write the child never read
		if !reading {   // else in a caller's Read that has not returned: the copy ends when it does
			<-h.feed.done
			stdinErr = h.feed.err
		}
	}

	r := Result{Pid: h.pid, Usage: exit.usage, StdinErr: stdinErr, Outcome: Outcome{
		ExitCode: exit.code, Signal: exit.signal, ExitErr: exit.err, TimedOut: timedOut,
		Cancelled: cancelled, PipesHeld: held, Sandbox: h.sandbox}}
	if h.proxy != nil { // the program has ended, and its network namespace with it
		r.Sandbox = h.proxy.end(h.svc.log, h.sandbox)
	}
	if exit.err != nil {
		h.svc.log.Warn("leader's exit status unknown", "pid", h.pid, "err", exit.err)
	}
	for i, c := range h.collectors {
		if c == nil {
			continue
		}
		if !held {
			<-c.done // sealed
		}
		sr := c.result(true)
		if sr.SpillErr != nil {
			h.svc.log.Warn("spill file lost", "pid", h.pid, "stream", c.name, "err", sr.SpillErr)
		}
		if i == 0 {
			r.Stdout = sr
		} else {
			r.Stderr = sr
		}
	}
	r.Duration = time.Since(h.start)
	h.result = r
	close(h.settledCh)

	// Daemons may outlive the result: the Handle stays live until they and their output are
	// gone, so Service.Close still ends them.
	<-h.pumpsDone
	if err := h.tree.waitGone(context.Background()); err != nil {
		h.svc.log.Warn("the end of the tree is not confirmed", "pid", h.pid, "err", err)
	}
	h.svc.forget(h)
	close(h.endedCh)
}

// end terminates the tree if anything of it is alive (with the sweeps of Terminate, unless
// sweep is false), and stops reading its output. A tree already gone is not swept for
// escaped processes here: Terminate and Service.Close do that. A terminal's cleanup always
// runs (once successfully): what is left of its session may have left the group.
func (h *Handle) end(ctx context.Context, sweep bool) error {
	var err error
	if h.tty != nil || !done.Closed(h.leaderDone) || h.tree.alive() {
		err = h.term.run(ctx, func() error { return h.escalate(sweep) }, "terminate", h.argv[0])
	}
	h.cutPumps()
	return err
}

// checkCtx refuses a nil ctx.
func checkCtx(op, name string, ctx context.Context) error {
	if ctx == nil {
		return &Error{Op: op, Name: name, Kind: ErrInvalid, Err: errors.New("nil context"),
			Hint: "pass context.Background() for no deadline"}
	}
	return nil
}

// memo runs one escalation at a time and remembers a successful one: concurrent callers share
// the run in progress, a caller after a success returns at once, a caller after a failure
// starts a new run.
type memo struct {
	mu  sync.Mutex
	cur *memoRun
}

type memoRun struct {
	done chan struct{}
	err  error
}

// run waits for the current run of f (starting one if needed), or for ctx.
func (m *memo) run(ctx context.Context, f func() error, op, name string) error {
	m.mu.Lock()
	r := m.cur
	if r == nil || done.Closed(r.done) && r.err != nil {
		r = &memoRun{done: make(chan struct{})}
		m.cur = r
		go func() {
			r.err = f()
			close(r.done)
		}()
	}
	m.mu.Unlock()
	select {
	case <-r.done:
		return r.err
	case <-ctx.Done():
		return &Error{Op: op, Name: name, Err: ctx.Err(),
			Hint: "the escalation goes on in the background; WaitForExit tells when the tree is gone"}
	}
}
