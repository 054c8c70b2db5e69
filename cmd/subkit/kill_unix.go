//go:build unix

package main

import (
	"context"
	"errors"
	"slices"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/internal/ending"
	"github.com/subkit/subkit/internal/guard"
	"github.com/subkit/subkit/internal/posix"
	"github.com/subkit/subkit/procinspect"
)

// errKillUnsupported: process_kill has no implementation on this platform.
var errKillUnsupported = errors.New("ending a process by pid is not supported on this platform")

// errStillPresent is wrapped by endProcess's error when SIGKILL did not take.
var errStillPresent = ending.ErrStillPresent

// endProcess ends the one process id names with the kit's ending (internal/ending): sig
// (SIGCONT after it, so a stopped process acts on it), up to grace for it to exit, then
// SIGKILL. Every signal is fenced by id (posix.SignalIdentity: on Linux through a pidfd
// opened before the start token is checked), so a reused pid is never signalled.
func endProcess(ctx context.Context, id procinspect.Identity, sig string, grace time.Duration) (ended, error) {
	t := &oneProcess{id: id, first: unix.SignalNum(sig)}
	if t.first == unix.SIGKILL {
		grace = 0
	}
	err := ending.Policy{Grace: grace}.End(ctx, t)
	return t.ended, err
}

// oneProcess is an ending.Target of one process named by its identity.
type oneProcess struct {
	id    procinspect.Identity
	first syscall.Signal
	ended
}

func (t *oneProcess) Signal(ctx context.Context, s ending.Step) error {
	sigs := []syscall.Signal{t.first, unix.SIGCONT}
	if s == ending.Kill || t.first == unix.SIGKILL {
		sigs = []syscall.Signal{unix.SIGKILL}
	}
	for _, sig := range sigs {
		sent, err := posix.SignalIdentity(ctx, t.id, sig)
		if err != nil {
			return err
		}
		if sent && sig != unix.SIGCONT {
			t.last = unix.SignalName(sig)
		}
	}
	return nil
}

func (t *oneProcess) Alive(ctx context.Context) (bool, error) { return procinspect.Alive(ctx, t.id) }

// WaitGone waits on the process's exit (a pidfd, a kqueue on macOS) rather than polling.
func (t *oneProcess) WaitGone(ctx context.Context) error { return posix.AwaitExit(ctx, t.id) }

// kitHelper reports whether pid is the kit's guard (Linux): the helper started with
// SUBKIT_HELPER=guard, which holds every tree of the server and ends them when it ends.
// Where a process's environment cannot be read (macOS) there is no guard either.
func kitHelper(ctx context.Context, pid int) (bool, error) {
	env, err := procinspect.Environ(ctx, pid)
	switch {
	case errors.Is(err, procinspect.ErrUnsupported), errors.Is(err, procinspect.ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return slices.Contains(env, guard.RoleVar+"="+guard.RoleGuard), nil
}
