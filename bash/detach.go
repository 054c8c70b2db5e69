package bash

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/subkit/subkit/internal/done"
	"github.com/subkit/subkit/subprocess"
)

// ExecOrStart runs a command in the foreground as Exec does, for at most wait. A command
// that ends by then (or times out, or is cancelled by ctx or Close first) gives Exec's Result
// and a nil Process. One still running after wait is not ended: it goes on in the background
// as a Process, as if Start had started it (no timeout, counted against MaxBackground, its
// whole output read with ReadOutput from offset 0, ended with Terminate or Close), returned
// with a zero Result; from then on ctx no longer concerns it.
//
// At the wait, admit (when not nil) is asked first whether the command may go to the
// background, for a limit of the caller's own; release is called once the process counts in
// Stats. When admit refuses, MaxBackground processes already run, or the executor is
// closing, the command stays in the foreground as with Exec, and its timeout (req.Timeout or
// Config.Timeout, from its start) ends it. A wait not below that timeout never reaches the
// background: ExecOrStart is then Exec.
//
// Errors are Exec's, and a *RequestError with Field "wait" for a wait that is not positive.
func (e *Executor) ExecOrStart(ctx context.Context, req Request, wait time.Duration, admit func() (release func(), err error)) (Result, *Process, error) {
	spec, timeout, err := e.spec(req, false)
	if err != nil {
		return Result{}, nil, err
	}
	if wait <= 0 {
		return Result{}, nil, &RequestError{Field: "wait", Err: fmt.Errorf("%v is not positive; use Exec for a command that stays in the foreground", wait)}
	}
	if wait >= timeout {
		res, err := e.Exec(ctx, req)
		return res, nil, err
	}
	spec.Timeout = 0 // a process that goes to the background has none: the timer below is the foreground's
	if err := e.enter("exec"); err != nil {
		return Result{}, nil, err
	}
	defer e.inflight.Done()
	h, err := e.svc.Spawn(ctx, spec)
	if err != nil {
		return Result{}, nil, spawnError("exec", err)
	}

	waitTimer := time.NewTimer(wait)
	defer waitTimer.Stop()
	var timeoutC <-chan time.Time
	cancelled, timedOut := false, false
	for settled := false; !settled; {
		select {
		case <-h.Done():
			settled = true
		case <-ctx.Done():
			cancelled, settled = true, true
		case <-e.closing:
			cancelled, settled = true, true
		case <-waitTimer.C:
			if ctx.Err() == nil && !done.Closed(h.Done()) {
				if p := e.detach(h, req.Command, admit); p != nil {
					return Result{}, p, nil
				}
			}
			t := time.NewTimer(timeout - wait) // it stays in the foreground, under its timeout
			defer t.Stop()
			timeoutC = t.C
		case <-timeoutC:
			timedOut, settled = true, true
		}
	}
	res, err := e.settle(h, req.Command, timeout, cancelled, timedOut)
	return res, nil, err
}

// detach makes the running foreground tree h a background Process, when admit and
// MaxBackground let it; else it returns nil.
func (e *Executor) detach(h *subprocess.Handle, command string, admit func() (func(), error)) *Process {
	if admit != nil {
		release, err := admit()
		if err != nil {
			e.log.Debug("a command stays in the foreground", "pid", h.Pid(), "err", err)
			return nil
		}
		if release == nil {
			e.log.Warn("a command stays in the foreground", "pid", h.Pid(), "err", errors.New("admit returned no release function"))
			return nil
		}
		defer release() // after e.mu is unlocked: the process counts in Stats by then
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed || e.running >= e.cfg.MaxBackground {
		return nil
	}
	e.running++
	return e.trackLocked(h, command)
}
