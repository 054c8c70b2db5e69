package subprocess

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/subkit/subkit/procinspect"
	"github.com/subkit/subkit/sandbox"
)

// TerminalSpec describes a program to run on a terminal of its own.
//
// Deprecated: use Spec with Spec.TTY and Service.Spawn; the program is then a *Handle.
type TerminalSpec struct {
	Path       string
	Args       []string
	Dir        string
	Env        []string
	Cols, Rows int // TTY.Cols and TTY.Rows
	TailBytes  int // TTY.TailBytes
	Grace      time.Duration
	Sandbox    *sandbox.Policy
	Readable   []string
}

// spec is the Spec that runs s.
func (s TerminalSpec) spec() Spec {
	return Spec{Path: s.Path, Args: s.Args, Dir: s.Dir, Env: s.Env, Grace: s.Grace,
		Sandbox: s.Sandbox, Readable: s.Readable,
		TTY: &TTY{Cols: s.Cols, Rows: s.Rows, TailBytes: s.TailBytes}}
}

// TerminalResult is how the program of a terminal ended.
//
// Deprecated: a terminal is a *Handle, whose Wait returns a Result.
type TerminalResult struct {
	Pid      int
	ExitCode int
	Signal   string
	ExitErr  error
	Duration time.Duration
}

// TerminateError reports the processes a terminal's Terminate could not end.
//
// Deprecated: Handle.Terminate returns an *Error whose Survivors name them.
type TerminateError struct {
	Survivors []procinspect.Identity
}

func (e *TerminateError) Error() string {
	ids := make([]string, len(e.Survivors))
	for i, id := range e.Survivors {
		ids[i] = id.String()
	}
	return fmt.Sprintf("subprocess: terminate terminal: %d processes survived SIGKILL: %s", len(ids), strings.Join(ids, ", "))
}

// Terminal is a program on a terminal of its own.
//
// Deprecated: spawn with Spec.TTY; the program is then a *Handle with the same methods.
type Terminal struct{ h *Handle }

// SpawnTerminal starts spec's program on a new pty.
//
// Deprecated: use Spawn with Spec.TTY (TTY holds Cols, Rows and TailBytes).
func (s *Service) SpawnTerminal(ctx context.Context, spec TerminalSpec) (*Terminal, error) {
	h, err := s.Spawn(ctx, spec.spec())
	if err != nil {
		return nil, err
	}
	return &Terminal{h}, nil
}

// handle is the terminal's Handle, or nil.
func (t *Terminal) handle() *Handle {
	if t == nil {
		return nil
	}
	return t.h
}

// Pid is Handle.Pid.
func (t *Terminal) Pid() int { return t.handle().Pid() }

// Identity is Handle.Identity.
func (t *Terminal) Identity() procinspect.Identity { return t.handle().Identity() }

// Write is Handle.Write.
func (t *Terminal) Write(p []byte) (int, error) { return t.handle().Write(p) }

// ReadOutput is Handle.ReadOutput of Stdout.
func (t *Terminal) ReadOutput(from int64, max int) (Delta, error) {
	return t.handle().ReadOutput(Stdout, from, max)
}

// Updated is Handle.Updated of Stdout.
func (t *Terminal) Updated() <-chan struct{} { return t.handle().Updated(Stdout) }

// Sandbox is Handle.Sandbox.
func (t *Terminal) Sandbox() *sandbox.Report { return t.handle().Sandbox() }

// WaitOutput is Handle.WaitOutput of Stdout.
func (t *Terminal) WaitOutput(ctx context.Context, from int64, max int) (Delta, error) {
	return t.handle().WaitOutput(ctx, Stdout, from, max)
}

// Resize is Handle.Resize.
func (t *Terminal) Resize(cols, rows int) error { return t.handle().Resize(cols, rows) }

// Foreground is Handle.Foreground.
func (t *Terminal) Foreground(ctx context.Context) (Foreground, error) {
	return t.handle().Foreground(ctx)
}

// SignalForeground is Handle.SignalForeground.
func (t *Terminal) SignalForeground(ctx context.Context, sig os.Signal) error {
	return t.handle().SignalForeground(ctx, sig)
}

// Done is Handle.Done.
func (t *Terminal) Done() <-chan struct{} { return t.handle().Done() }

// Wait is Handle.Wait, its Result cut to a TerminalResult.
func (t *Terminal) Wait(ctx context.Context) (TerminalResult, error) {
	r, err := t.handle().Wait(ctx)
	if err != nil {
		return TerminalResult{}, err
	}
	return TerminalResult{Pid: r.Pid, ExitCode: r.ExitCode, Signal: r.Signal, ExitErr: r.ExitErr, Duration: r.Duration}, nil
}

// Terminate is Handle.Terminate; survivors are reported as a *TerminateError joined with the
// *Error.
func (t *Terminal) Terminate(ctx context.Context) error {
	err := t.handle().Terminate(ctx)
	var e *Error
	if errors.As(err, &e) && len(e.Survivors) > 0 {
		return errors.Join(&TerminateError{Survivors: e.Survivors}, err)
	}
	return err
}

// Close is Handle.Close.
func (t *Terminal) Close() error { return t.handle().Close() }
