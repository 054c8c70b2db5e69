package subprocess

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/subkit/subkit/procinspect"
)

// Result is how a spawned tree ended, final once the Handle settles.
type Result struct {
	Pid      int
	ExitCode int    // the leader's exit status; -1 when a signal ended it
	Signal   string // "SIGKILL", "SIGTERM", ... when a signal ended the leader; "" otherwise
	TimedOut bool   // Spec.Timeout expired and the Service terminated the tree
	Duration time.Duration
	// PipesHeld is true when descendants still held a collected output pipe open after the
	// leader exited and the drain grace (Spec.DrainGrace) ran out: the result settled without waiting for them.
	PipesHeld bool
	Stdout    StreamResult // zero unless the stream was collected
	Stderr    StreamResult
}

// Handle is one spawned process tree. All methods are safe for concurrent use.
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
	place          *spillPlace
	pumpsR         [2]*os.File   // read ends the pumps own, for cutting the drain
	feedDone       chan struct{} // closed when the InputBytes writer has returned, or nil
	feedW          *os.File

	leaderDone chan struct{} // closed once the leader has been reaped
	settledCh  chan struct{} // closed once result is final
	result     Result
	timedOut   atomic.Bool

	termMu  sync.Mutex
	termRun *termRun

	closeOnce sync.Once
	closeErr  error
}

type termRun struct {
	done chan struct{}
	err  error
}

// Pid is the leader's process id (also the process group id on POSIX).
func (h *Handle) Pid() int { return h.pid }

// SpillDir is the private directory holding this handle's spill files, or "" while none has
// been needed. Its files outlive the handle; their owner removes them.
func (h *Handle) SpillDir() string {
	h.place.mu.Lock()
	defer h.place.mu.Unlock()
	return h.place.dir
}

// Argv is the argument vector the leader was started with.
func (h *Handle) Argv() []string { return append([]string(nil), h.argv...) }

// Stdin is the write end of the child's stdin when Spec.Stdin is InputPipe, else nil. Close
// it to send end-of-file.
func (h *Handle) Stdin() io.WriteCloser { return nilIfNone(h.stdin) }

// Stdout is the read end of the child's stdout when its disposition is Pipe, else nil.
func (h *Handle) Stdout() io.ReadCloser { return nilIfNone(h.stdout) }

// Stderr is the read end of the child's stderr when its disposition is Pipe, else nil.
func (h *Handle) Stderr() io.ReadCloser { return nilIfNone(h.stderr) }

func nilIfNone(f *os.File) interface {
	io.ReadWriteCloser
} {
	if f == nil {
		return nil
	}
	return f
}

// Done is closed when the result is final: the leader has exited and the collected streams
// have drained (or the drain grace has run out).
func (h *Handle) Done() <-chan struct{} { return h.settledCh }

func (h *Handle) finished() bool { return isClosed(h.settledCh) && !h.tree.alive() }

// Wait returns the result once the handle settles, or ctx's error first. It does not end the
// tree: pair it with Terminate to bound it.
func (h *Handle) Wait(ctx context.Context) (Result, error) {
	select {
	case <-h.settledCh:
		return h.result, nil
	case <-ctx.Done():
		return Result{}, &Error{Op: "wait", Name: h.argv[0], Err: ctx.Err()}
	}
}

// WaitForExit returns once no member of the tree is left (the leader and every process still
// in its group), or with ctx's error. It lets a consumer's teardown confirm all is quiet.
func (h *Handle) WaitForExit(ctx context.Context) error {
	select {
	case <-h.leaderDone:
	case <-ctx.Done():
		return &Error{Op: "wait for exit", Name: h.argv[0], Err: ctx.Err()}
	}
	if err := h.tree.waitGone(ctx); err != nil {
		return &Error{Op: "wait for exit", Name: h.argv[0], Err: err}
	}
	return nil
}

// Signal sends sig to the whole tree (the process group on POSIX, falling back to the
// leader). A tree already gone is not an error.
func (h *Handle) Signal(sig os.Signal) error {
	if err := h.tree.signal(sig); err != nil {
		return &Error{Op: "signal", Name: h.argv[0], Err: err}
	}
	return nil
}

// Terminate ends the tree: SIGTERM to every member, then SIGKILL to whatever is left after
// the grace. Members are the process group and, on Linux, the processes that left it but
// carry the tree's cookie (setsid daemons, double forks), found by a sweep of the process
// table even when the group itself is already gone. It returns once all of them are gone, or
// with ctx's error (the escalation still runs to its end in the background). Concurrent calls
// share one escalation; a call after a successful one returns at once. It reports a tree still
// present well after SIGKILL.
func (h *Handle) Terminate(ctx context.Context) error {
	h.termMu.Lock()
	run := h.termRun
	if run == nil || (isClosed(run.done) && run.err != nil) {
		run = &termRun{done: make(chan struct{})}
		h.termRun = run
		go h.escalate(run)
	}
	h.termMu.Unlock()
	select {
	case <-run.done:
		return run.err
	case <-ctx.Done():
		return &Error{Op: "terminate", Name: h.argv[0], Err: ctx.Err(),
			Hint: "the escalation goes on; call WaitForExit to learn when the tree is gone"}
	}
}

func (h *Handle) escalate(run *termRun) {
	defer close(run.done)
	// Even when the group is gone, processes that left it carrying the tree's cookie may
	// remain: term sweeps for them (one read of the process table).
	var errs []error
	if err := h.tree.term(); err != nil {
		errs = append(errs, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.grace)
	gone := h.waitTree(ctx) == nil
	cancel()
	if !gone {
		if err := h.tree.kill(); err != nil {
			errs = append(errs, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), killWait)
		if err := h.waitTree(ctx); err != nil {
			errs = append(errs, errors.New("tree still present "+killWait.String()+" after SIGKILL"))
		}
		cancel()
	}
	// Escaped processes may have started others while they were being ended.
	if f, ok := h.tree.(interface {
		finish(context.Context, time.Duration) error
	}); ok {
		ctx, cancel := context.WithTimeout(context.Background(), killWait+h.grace)
		if err := f.finish(ctx, h.grace); err != nil {
			errs = append(errs, err)
		}
		cancel()
	}
	if len(errs) > 0 {
		run.err = &Error{Op: "terminate", Name: h.argv[0], Err: errors.Join(errs...)}
	}
}

// treeAlive: the leader has not been reaped, or its group has members.
func (h *Handle) treeAlive() bool {
	return !isClosed(h.leaderDone) || h.tree.alive()
}

func (h *Handle) waitTree(ctx context.Context) error {
	select {
	case <-h.leaderDone:
	case <-ctx.Done():
		return ctx.Err()
	}
	return h.tree.waitGone(ctx)
}

// Members lists the processes of the tree alive now, as exact identities with their parent,
// group and session: on POSIX the members of its process group (until the group has been seen
// empty) and, on Linux, processes that left the group but carry the tree's cookie. After the
// result settles it tells whether daemons outlived the leader.
func (h *Handle) Members(ctx context.Context) ([]procinspect.Proc, error) {
	m, ok := h.tree.(interface {
		members(context.Context) ([]procinspect.Proc, error)
	})
	if !ok {
		return nil, &Error{Op: "members", Name: h.argv[0], Kind: ErrUnsupported}
	}
	procs, err := m.members(ctx)
	if err != nil {
		return procs, &Error{Op: "members", Name: h.argv[0], Err: err}
	}
	return procs, nil
}

// ReadOutput reads a collected stream from offset from (whole-stream byte coordinates), at most
// max bytes (all that is available when max <= 0). Bytes the tail no longer holds come from the
// spill file while it exists; otherwise they are reported as Dropped. The handle keeps no
// cursor: any number of readers may read from any offset, before and after settlement.
func (h *Handle) ReadOutput(s Stream, from int64, max int) (Delta, error) {
	if s != Stdout && s != Stderr {
		return Delta{}, invalid("read output", s.String(), "stream must be Stdout or Stderr")
	}
	c := h.collectors[s-1]
	if c == nil {
		return Delta{}, invalid("read output", s.String(), "the stream's disposition is not Collect")
	}
	return c.read(from, max)
}

// Updated returns a channel that is closed when stream s receives bytes after the call, or
// ends; a reader waits on it instead of polling ReadOutput. It is nil when s is not collected.
func (h *Handle) Updated(s Stream) <-chan struct{} {
	if s != Stdout && s != Stderr || h.collectors[s-1] == nil {
		return nil
	}
	return h.collectors[s-1].updated()
}

// Close terminates the tree if its group is still alive, waits for the result to settle, and
// closes every descriptor the handle handed out (Stdin, Stdout, Stderr pipes). Spill files are
// kept. It does not sweep for processes that left a group already gone: Terminate and
// Service.Close do. It is safe to call more than once.
func (h *Handle) Close() error {
	h.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), h.grace+killWait+h.drain)
		defer cancel()
		if h.treeAlive() {
			h.closeErr = h.Terminate(ctx)
		}
		select {
		case <-h.settledCh:
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

// run waits for the leader, drains, settles. It is the handle's one long-lived goroutine.
func (h *Handle) run(wait func() (*os.ProcessState, error), timeout time.Duration) {
	var timer *time.Timer
	if timeout > 0 {
		timer = time.AfterFunc(timeout, func() {
			h.timedOut.Store(true)
			h.Terminate(context.Background())
		})
	}
	state, _ := wait()
	close(h.leaderDone)
	if timer != nil {
		timer.Stop()
	}

	// Bounded drain: descendants may hold the pipes open.
	drain := time.NewTimer(h.drain)
	held := false
	for i, c := range h.collectors {
		if c == nil {
			continue
		}
		if !held {
			select {
			case <-c.done:
				continue
			case <-drain.C:
				held = true
			}
		}
		cut(h.pumpsR[i])
		<-c.done
	}
	drain.Stop()
	if h.feedDone != nil {
		h.feedW.Close() // unblocks a writer the child never read
		<-h.feedDone
	}

	r := Result{Pid: h.pid, ExitCode: -1, TimedOut: h.timedOut.Load(), PipesHeld: held}
	if state != nil {
		r.ExitCode = state.ExitCode()
		r.Signal = h.tree.exitSignal(state)
	}
	for i, c := range h.collectors {
		if c == nil {
			continue
		}
		c.seal()
		sr := c.result()
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
	h.svc.settled(h)
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
