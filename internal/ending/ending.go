// Package ending is the kit's one way to end a process tree. A Policy says how: the stop
// request, the grace the members get to act on it, the forced kill, and how long to wait for
// the kill to take; Hurry cuts every grace short. A Target is what gets ended: it can be
// signalled with the step in force and asked whether a member may still live (or, where an
// event tells, waited for). A Target whose members can re-parent out of sight while it is
// being ended (a terminal's session once its leader is gone, the processes escapees start)
// rediscovers them once the first ending is over, and they are ended in turn, the grace they
// get being what is left of the first one.
//
// Every wait that has no event to wait on polls with internal/backoff. Handle and Terminal
// in package subprocess, the posix sweeps, the guard and the Windows backend all end trees
// through End, so a change to the escalation is one edit here.
package ending

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/subkit/subkit/internal/backoff"
)

// KillWait bounds the wait for a target to vanish after the kill when Policy.KillWait is
// zero. A member still present then is one the kernel cannot end now (uninterruptible sleep):
// End reports it.
const KillWait = 10 * time.Second

// MaxRounds bounds the rediscoveries of one End: each round ends what one look found, and
// another is needed only when those members started others meanwhile.
const MaxRounds = 5

// Step is what a Target is asked to do.
type Step int

const (
	// Stop is the request to end: SIGTERM (and SIGCONT, so a stopped member can act on it)
	// on POSIX, CTRL_BREAK_EVENT where Windows can send it.
	Stop Step = iota
	// Kill ends the members by force: SIGKILL, TerminateJobObject, taskkill /F.
	Kill
)

func (s Step) String() string {
	if s == Kill {
		return "kill"
	}
	return "stop"
}

// ErrStillPresent is wrapped by End's error when members are still present KillWait after
// the kill.
var ErrStillPresent = errors.New("still present after the kill")

// Target is something End can end.
type Target interface {
	// Signal sends the step's signal to every member the target knows of now. A member
	// already gone is no error. It must never signal a process group or pid that may have
	// been reused: members are fenced by their identity, or by a leader held unreaped.
	Signal(ctx context.Context, s Step) error
	// Alive reports whether a member may still live; an error is returned by End's waits.
	Alive(ctx context.Context) (bool, error)
}

// Waiter is a Target that learns from an event that it is gone: End waits on WaitGone
// instead of polling Alive. WaitGone returns nil once no member is left, or ctx's error.
type Waiter interface {
	WaitGone(ctx context.Context) error
}

// Rediscoverer is a Target whose members can re-parent, or start others, out of its sight
// while it is being ended. Rediscover, called once an ending is over, looks for them and
// returns them as a Target to end in turn, or nil when there are none.
type Rediscoverer interface {
	Rediscover(ctx context.Context) (Target, error)
}

// Policy is how End ends a target. The zero value asks to stop, kills at once, and waits
// KillWait for the kill to take.
type Policy struct {
	// Grace is how long the members get to act on Stop before Kill; 0 kills at once.
	Grace time.Duration
	// KillWait bounds the wait after Kill; 0 means KillWait.
	KillWait time.Duration
	// Hurry, when done, ends every grace at once (Service.Hurry). nil never does.
	Hurry context.Context
	// Poll is the back-off of the waits on targets that are not Waiters.
	Poll backoff.Policy
}

func (p Policy) killWait() time.Duration {
	if p.KillWait > 0 {
		return p.KillWait
	}
	return KillWait
}

// End ends t: Stop, a wait of up to the grace (Hurry ends it), then, unless t is gone, Kill
// and a wait of up to KillWait. A Rediscoverer is then asked for what escaped, which is ended
// the same way with what is left of the grace, for at most MaxRounds rounds. It returns nil
// once everything is gone; otherwise every signal error, the failure of a wait, and
// ErrStillPresent when the kill did not take, joined. ctx bounds it all.
func (p Policy) End(ctx context.Context, t Target) error {
	deadline := time.Now().Add(p.Grace)
	var errs []error
	for round := 0; ; round++ {
		grace := time.Until(deadline)
		if p.Hurry != nil && p.Hurry.Err() != nil {
			grace = 0
		}
		if err := p.endOne(ctx, t, grace); err != nil {
			errs = append(errs, err)
		}
		r, ok := t.(Rediscoverer)
		if !ok || ctx.Err() != nil {
			break
		}
		next, err := r.Rediscover(ctx)
		if err != nil {
			errs = append(errs, err)
		}
		if next == nil {
			break
		}
		if round == MaxRounds {
			errs = append(errs, fmt.Errorf("ending: members keep appearing after %d rounds", MaxRounds))
			break
		}
		t = next
	}
	return errors.Join(errs...)
}

// endOne is one round of End: the ladder, without rediscovery.
func (p Policy) endOne(ctx context.Context, t Target, grace time.Duration) error {
	var errs []error
	if err := t.Signal(ctx, Stop); err != nil {
		errs = append(errs, fmt.Errorf("stop: %w", err))
	}
	if grace > 0 {
		gctx, cancel := context.WithTimeout(ctx, grace)
		if p.Hurry != nil {
			stop := context.AfterFunc(p.Hurry, cancel)
			defer stop()
		}
		err := p.Wait(gctx, t)
		cancel()
		if err == nil {
			return errors.Join(errs...)
		}
		if ctx.Err() != nil { // the caller gave up
			return errors.Join(append(errs, err)...)
		}
		// The grace ran out, or the wait failed: the kill decides, and its wait reports.
	} else if alive, err := t.Alive(ctx); err == nil && !alive {
		return errors.Join(errs...)
	}
	if err := t.Signal(ctx, Kill); err != nil {
		errs = append(errs, fmt.Errorf("kill: %w", err))
	}
	kctx, cancel := context.WithTimeout(ctx, p.killWait())
	defer cancel()
	if err := p.Wait(kctx, t); err != nil {
		if kctx.Err() != nil && ctx.Err() == nil {
			err = fmt.Errorf("%w: waited %v", ErrStillPresent, p.killWait())
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Wait returns once t is gone: on WaitGone's event for a Waiter, else polling Alive with
// p.Poll's back-off. It returns ctx's error or Alive's first.
func (p Policy) Wait(ctx context.Context, t Target) error {
	if w, ok := t.(Waiter); ok {
		return w.WaitGone(ctx)
	}
	return backoff.Until(ctx, p.Poll, func() (bool, error) {
		alive, err := t.Alive(ctx)
		return !alive, err
	})
}
