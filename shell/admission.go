package shell

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/subkit/subkit/internal/done"
)

// enter admits a call: a valid Session, a context, not closed.
func (s *Session) enter(op string, ctx context.Context) error {
	if s == nil || s.term == nil {
		return &Error{Op: op, Kind: ErrInvalid, Err: errors.New("the Session was not returned by Open"),
			Hint: "use the *Session that Open or Manager.Open returned"}
	}
	if ctx == nil {
		return &Error{Op: op, ID: s.id, Kind: ErrInvalid, Err: errors.New("nil context")}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return &Error{Op: op, ID: s.id, Kind: ErrClosed}
	}
	s.inflight.Add(1)
	return nil
}

// takeTurn waits for the session's turn.
func (s *Session) takeTurn(op string, ctx context.Context) error {
	select {
	case s.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return &Error{Op: op, ID: s.id, Err: ctx.Err(), Hint: "another call on this session is still waiting"}
	case <-s.life.Done():
		return &Error{Op: op, ID: s.id, Kind: ErrClosed}
	}
}

// take waits for the session's turn; an ended ctx never gets it.
func (s *Session) take(op string, ctx context.Context) error {
	if err := s.takeTurn(op, ctx); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		s.give()
		if done.Closed(s.life.Done()) {
			return &Error{Op: op, ID: s.id, Kind: ErrClosed}
		}
		return &Error{Op: op, ID: s.id, Err: err}
	}
	return nil
}

func (s *Session) give() { <-s.turn }

func (s *Session) yield(op string, d time.Duration) (time.Duration, error) {
	switch {
	case d < 0:
		return 0, &Error{Op: op, ID: s.id, Kind: ErrInvalid, Err: fmt.Errorf("yield %v is negative; use 0 for the default %v", d, s.cfg.Yield)}
	case d > s.cfg.MaxYield:
		return 0, &Error{Op: op, ID: s.id, Kind: ErrInvalid, Err: fmt.Errorf("yield %v is above MaxYield %v", d, s.cfg.MaxYield),
			Hint: "Poll again to keep waiting"}
	case d == 0:
		return s.cfg.Yield, nil
	}
	return d, nil
}

// call admits one call of op: it refuses a closed session and what check refuses, checks the
// yield, binds ctx to the session's life, takes the session's turn and marks it used, then
// runs body; an error of a call Close cut short says ErrClosed.
func (s *Session) call(op string, ctx context.Context, yield time.Duration, check func() error,
	body func(ctx context.Context, y time.Duration) (Step, error)) (_ Step, err error) {
	if err := s.enter(op, ctx); err != nil {
		return Step{}, err
	}
	defer s.inflight.Done()
	defer s.closedErr(op, &err)
	if check != nil {
		if err := check(); err != nil {
			return Step{}, err
		}
	}
	y, err := s.yield(op, yield)
	if err != nil {
		return Step{}, err
	}
	ctx, cancel := s.bind(ctx)
	defer cancel()
	if err := s.take(op, ctx); err != nil {
		return Step{}, err
	}
	defer s.give()
	s.touch()
	return body(ctx, y)
}

// closedErr makes an error of a call that Close cut short say ErrClosed.
func (s *Session) closedErr(op string, err *error) {
	if *err != nil && done.Closed(s.life.Done()) && !errors.Is(*err, ErrClosed) {
		*err = &Error{Op: op, ID: s.id, Kind: ErrClosed, Err: *err}
	}
}

// runnable says why a command cannot be sent now.
func (s *Session) runnable(op string) error {
	if s.shellExited() {
		r, _ := s.exitResult()
		return &Error{Op: op, ID: s.id, Kind: ErrExited,
			Err:  fmt.Errorf("status %d%s", r.ExitCode, signalSuffix(r.Signal)),
			Hint: "nothing ran; open a new session"}
	}
	s.mu.Lock()
	waiting, cmd := s.waiting, s.command
	s.mu.Unlock()
	if waiting {
		return &Error{Op: op, ID: s.id, Kind: ErrBusy, Err: fmt.Errorf("%q has not finished", cmd),
			Hint: "nothing ran; Poll it, Write input to it, or Interrupt it first"}
	}
	return nil
}
