//go:build unix

package posix

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"github.com/subkit/subkit/internal/backoff"
	"github.com/subkit/subkit/procinspect"
)

// Leader is how a Tree learns of its leader's exit and reaps it.
type Leader interface {
	// Wait returns once the leader has exited, with its status, leaving it unreaped when it
	// can; reaped reports that it could not and the leader is reaped already.
	Wait() (e Exit, reaped bool, err error)
	// Reap reaps the exited leader.
	Reap() error
}

// Child is a Leader for a child of this process started with os/exec: its exit is learnt from
// a pidfd (a kqueue on macOS) in the runtime poller, so no OS thread waits, and its status is
// read without reaping it.
type Child struct {
	cmd   *exec.Cmd // the command, unless the watch owns the child
	w     *pidWatch // nil when no watch could be made: Wait then reaps as os/exec does
	owned bool      // w reaps the child (cmd.Process is released)
	err   error     // why there is no watch
}

// WatchChild watches cmd's started process. From then on the Child owns it: the caller must
// not call cmd.Wait, nor use cmd.Process (on Linux its pidfd is taken over and the Process
// released, after which its Pid reads -1).
func WatchChild(cmd *exec.Cmd) *Child {
	w, owned, err := watchChild(cmd.Process)
	c := &Child{w: w, owned: owned, err: err}
	if !owned {
		c.cmd = cmd // what reaps it; an owned child needs nothing of cmd (its environment is large)
	}
	return c
}

// Wait implements Leader. Without a watch (this OS, or no descriptor left) or without a
// status that leaves the child unreaped, it reaps the child, holding a thread while it waits.
func (c *Child) Wait() (Exit, bool, error) {
	err := c.err
	var e Exit
	if err == nil {
		if err = c.w.wait(); err == nil {
			e, err = c.w.exit()
		}
		if !c.owned {
			c.w.close()
		}
		if err == nil {
			return e, false, nil
		}
	}
	if c.owned {
		return Exit{Code: -1}, false, fmt.Errorf("watch pid: %w", err)
	}
	werr := c.cmd.Wait()
	e, err = exitOf(c.cmd.ProcessState, werr)
	c.cmd = nil // reaped
	return e, true, err
}

// Reap implements Leader.
func (c *Child) Reap() error {
	switch {
	case c.owned:
		return c.w.reap()
	case c.cmd == nil:
		return nil // Wait reaped it
	}
	if err := c.cmd.Wait(); err != nil && !errors.As(err, new(*exec.ExitError)) {
		return err
	}
	return nil
}

// exitOf is how a process ended, from what cmd.Wait reported.
func exitOf(ps *os.ProcessState, err error) (Exit, error) {
	if errors.As(err, new(*exec.ExitError)) {
		err = nil // a non-zero status is not a failure to wait
	}
	if err != nil || ps == nil {
		return Exit{Code: -1}, fmt.Errorf("wait for pid: %w", err)
	}
	var u Usage
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		u = usage(ru.Utime.Nano(), ru.Stime.Nano(), int64(ru.Maxrss))
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return Exit{Code: -1, Signal: ws.Signal(), Usage: u}, nil
	}
	return Exit{Code: ps.ExitCode(), Usage: u}, nil
}

// AwaitExit returns nil once the process id names has exited, or is not that process any
// more, or ctx's error. It waits on a pidfd (a kqueue on macOS) where it can, and polls with
// back-off where not.
func AwaitExit(ctx context.Context, id procinspect.Identity) error {
	gone := func() (bool, error) {
		ok, err := procinspect.Alive(ctx, id)
		return !ok && err == nil, nil // a failed look is a live process: look again
	}
	w, err := openPidWatch(id.Pid, false)
	if err != nil {
		return backoff.Until(ctx, backoff.Policy{}, gone)
	}
	defer w.close()
	stop := context.AfterFunc(ctx, w.close) // ends a pending wait
	defer stop()
	if done, _ := gone(); done { // the pid may have been reused before the watch pinned it
		return nil
	}
	if w.wait() == nil {
		return nil
	}
	return backoff.Until(ctx, backoff.Policy{}, gone)
}

// usage is a Usage from the fields of a struct rusage (CPU times in nanoseconds); ru_maxrss is
// in KiB on Linux and in bytes on macOS.
func usage(user, system, maxrss int64) Usage {
	if runtime.GOOS != "darwin" {
		maxrss *= 1024
	}
	return Usage{User: time.Duration(user), System: time.Duration(system), MaxRSS: maxrss}
}
