package bash

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/subkit/subkit/subprocess"

	"github.com/subkit/subkit/internal/done"
	"github.com/subkit/subkit/internal/utf8bridge"
)

// Offsets are positions in a background process's output streams, in whole-stream bytes:
// offset 0 is the first byte the stream ever produced.
type Offsets struct {
	Stdout, Stderr int64
}

// Delta is one offset read of a background process (see Process.ReadOutput).
type Delta struct {
	Pid     int
	Command string
	// Stdout and Stderr are the bytes read from each stream, with what was dropped before
	// them (neither the in-memory tail nor a spill file still holds those bytes).
	Stdout, Stderr subprocess.Delta
	// Next is where to read from next time.
	Next Offsets
	// Result is set once the process has ended: its final status. Output may remain to be
	// read when the read was capped; Done says when nothing is left.
	Result *Result
}

// Done reports whether the process has ended and both streams were read to their end.
func (d Delta) Done() bool { return d.Result != nil && d.Stdout.Done && d.Stderr.Done }

// Process is a background command started by Executor.Start. Its methods are safe for
// concurrent use.
type Process struct {
	e       *Executor
	h       *subprocess.Handle
	command string

	ctx       context.Context // ends when the process is closed or the executor is
	cancelCtx context.CancelFunc
	done      chan struct{} // closed when result (or err) is final
	result    Result
	err       error
	cancelled atomic.Bool

	slotOnce  sync.Once
	closeOnce sync.Once
	closeErr  error
}

// Start runs a command in the background and returns at once. No timeout applies; the
// process runs until it exits, Terminate or Close ends it, or the Executor is closed. Each
// stream keeps Config.MaxOutputBytes in memory and the whole stream (up to MaxSpillBytes) in
// a spill file, read with ReadOutput. At most Config.MaxBackground processes run at once:
// past that Start fails with ErrTooMany. A process stops counting once its whole tree is
// gone, or when it is closed.
//
// ctx bounds the start only.
func (e *Executor) Start(ctx context.Context, req Request) (*Process, error) {
	spec, _, err := e.spec(req, true)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	switch {
	case e.closed:
		e.mu.Unlock()
		return nil, &Error{Op: "start", Kind: ErrClosed}
	case e.running >= e.cfg.MaxBackground:
		n := e.running
		e.mu.Unlock()
		return nil, &Error{Op: "start", Kind: ErrTooMany,
			Err:  fmt.Errorf("%d background processes are running, the maxBackground limit", n),
			Hint: "wait for one to exit, or end one with Terminate or Close"}
	}
	e.running++
	e.inflight.Add(1)
	e.mu.Unlock()
	defer e.inflight.Done()

	h, err := e.svc.Spawn(ctx, spec)
	if err != nil {
		e.mu.Lock()
		e.running--
		e.mu.Unlock()
		return nil, spawnError("start", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.trackLocked(h, req.Command), nil
}

// trackLocked makes h, already counted in e.running, a background Process watched until its
// tree is gone; e.mu is held.
func (e *Executor) trackLocked(h *subprocess.Handle, command string) *Process {
	pctx, cancel := context.WithCancel(e.life)
	p := &Process{e: e, h: h, command: command, ctx: pctx, cancelCtx: cancel, done: make(chan struct{})}
	e.procs[p] = struct{}{}
	e.watchers.Add(1)
	go p.watch()
	return p
}

// watch settles the result, then holds the running slot until the whole tree is gone.
func (p *Process) watch() {
	defer p.e.watchers.Done()
	select {
	case <-p.h.Done():
	case <-p.e.life.Done():
		if !done.Closed(p.h.Done()) { // Close could not end it
			p.err = &Error{Op: "wait", Name: p.name(), Err: errors.New("the process group could not be ended")}
			close(p.done)
			return
		}
	}
	sr, _ := p.h.Wait(context.Background()) // settled: returns at once
	r := newResult(p.command, p.h, sr)
	r.Cancelled = p.cancelled.Load() || (done.Closed(p.e.closing) && r.Signal != "") // a background command has no timeout
	gone := survivors(p.h, &r)
	p.result = r
	if !r.Lingering {
		p.releaseSlot() // exited members not yet reaped do not count as running
	}
	close(p.done)
	if !gone && p.h.WaitForExit(p.ctx) == nil {
		p.releaseSlot()
	}
}

func (p *Process) name() string { return fmt.Sprint("pid ", p.h.Pid()) }

func (p *Process) releaseSlot() {
	p.slotOnce.Do(func() {
		p.e.mu.Lock()
		p.e.running--
		p.e.mu.Unlock()
	})
}

// Pid is the shell's process id (its process group id on POSIX).
func (p *Process) Pid() int { return p.h.Pid() }

// Command is the command the process runs.
func (p *Process) Command() string { return p.command }

// Done is closed once the result is final (Wait then returns at once).
func (p *Process) Done() <-chan struct{} { return p.done }

// ReadOutput reads both streams from the given offsets, at most max bytes of each (all that
// is available when max <= 0), without blocking. The process keeps no cursor: pass the
// previous Delta's Next to read incrementally, or any earlier offset to read again, while the
// process runs and after it has ended (also after Close). Bytes neither the tail nor the spill
// file still holds are reported as Dropped. While a stream is still open, a read never ends
// inside a UTF-8 character unless that character is all it has.
func (p *Process) ReadOutput(from Offsets, max int) (Delta, error) {
	d := Delta{Pid: p.h.Pid(), Command: p.command}
	if done.Closed(p.done) && p.err == nil {
		r := p.result
		d.Result = &r
	}
	for _, s := range []struct {
		stream subprocess.Stream
		from   int64
		out    *subprocess.Delta
		field  string
	}{
		{subprocess.Stdout, from.Stdout, &d.Stdout, "Offsets.Stdout"},
		{subprocess.Stderr, from.Stderr, &d.Stderr, "Offsets.Stderr"},
	} {
		sd, err := p.h.ReadOutput(s.stream, s.from, max)
		if err != nil {
			return Delta{}, &RequestError{Field: s.field, Err: err}
		}
		if !sd.Done {
			holdBackPartialRune(&sd)
		}
		*s.out = sd
	}
	d.Next = Offsets{Stdout: d.Stdout.Next, Stderr: d.Stderr.Next}
	return d, nil
}

// WaitOutput waits until either stream has bytes past its offset in from, or the process has
// ended, and then reads as ReadOutput does; it returns ctx's error (with the read it made)
// when ctx ends first. It never misses output, however it races with the process.
func (p *Process) WaitOutput(ctx context.Context, from Offsets, max int) (Delta, error) {
	if ctx == nil {
		return Delta{}, &RequestError{Field: "ctx", Err: errors.New("nil context; pass context.Background() for no deadline")}
	}
	for {
		// The wake-ups are taken before the read, so a write between the two is not missed.
		out, errs := p.h.Updated(subprocess.Stdout), p.h.Updated(subprocess.Stderr)
		d, err := p.ReadOutput(from, max)
		if err != nil || len(d.Stdout.Data) > 0 || len(d.Stderr.Data) > 0 || d.Stdout.Dropped > 0 || d.Stderr.Dropped > 0 || d.Result != nil {
			return d, err
		}
		if d.Stdout.Done {
			out = nil // ended: its channel is closed, and nothing more will come
		}
		if d.Stderr.Done {
			errs = nil
		}
		select {
		case <-out:
		case <-errs:
		case <-p.done:
		case <-ctx.Done():
			return d, ctx.Err()
		}
	}
}

// holdBackPartialRune drops an incomplete UTF-8 sequence from the end of d, unless it is all
// d holds; the next read returns it whole.
func holdBackPartialRune(d *subprocess.Delta) {
	if n := utf8bridge.WholeLen(d.Data); n > 0 {
		d.Next -= int64(len(d.Data) - n)
		d.Data = d.Data[:n]
	}
}

// Wait returns the result once the process has ended, or ctx's error first. It does not end
// the process: pair it with Terminate to bound it.
func (p *Process) Wait(ctx context.Context) (Result, error) {
	select {
	case <-p.done:
		return p.result, p.err
	case <-ctx.Done():
		return Result{}, &Error{Op: "wait", Name: p.name(), Err: ctx.Err()}
	}
}

// Terminate ends the process's whole tree: SIGTERM to the group, SIGKILL after the grace. It
// returns once the tree is gone, or with ctx's error (the escalation goes on). A process that
// has already ended is not an error. The result says Cancelled when it was still running.
func (p *Process) Terminate(ctx context.Context) error {
	if !done.Closed(p.h.Done()) {
		p.cancelled.Store(true)
	}
	if err := p.h.Terminate(ctx); err != nil {
		return &Error{Op: "terminate", Name: p.name(), Err: err}
	}
	p.releaseSlot()
	return nil
}

// Close terminates the process if it is still running, waits for its result, and releases
// it: it no longer counts against MaxBackground and its spill files become subject to the
// retention sweep. ReadOutput still answers from the in-memory tail (and from the spill file
// until a sweep removes it). Close is safe to call more than once.
func (p *Process) Close() error {
	p.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), p.e.cfg.Grace+stopSlack)
		defer cancel()
		err := p.Terminate(ctx)
		select {
		case <-p.done:
		case <-ctx.Done():
		}
		p.cancelCtx()
		p.h.Close()
		p.releaseSlot()
		p.e.mu.Lock()
		delete(p.e.procs, p)
		p.e.mu.Unlock()
		if sr, err := p.h.Wait(ctx); err == nil {
			p.e.store.release(sr)
		}
		p.closeErr = err
	})
	return p.closeErr
}
