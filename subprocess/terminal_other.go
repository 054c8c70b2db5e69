//go:build !unix

package subprocess

import (
	"context"
	"errors"
	"os"

	"github.com/subkit/subkit/procinspect"
	"github.com/subkit/subkit/sandbox"
)

// Terminal is a program on a pty; this platform has none, so SpawnTerminal always fails
// with ErrUnsupported and no Terminal exists.
type Terminal struct{}

func startTerminal(s *Service, path, dir string, env []string, spec TerminalSpec) (*Terminal, error) {
	return nil, &Error{Op: "spawn terminal", Name: spec.Path, Kind: ErrUnsupported, Err: errors.New("no terminals on " + platformName)}
}

func errNoTerminal() error { return &Error{Op: "terminal", Kind: ErrUnsupported} }

func (t *Terminal) Pid() int                                      { return 0 }
func (t *Terminal) Identity() procinspect.Identity                { return procinspect.Identity{} }
func (t *Terminal) Write(p []byte) (int, error)                   { return 0, errNoTerminal() }
func (t *Terminal) ReadOutput(from int64, max int) (Delta, error) { return Delta{}, errNoTerminal() }
func (t *Terminal) Resize(cols, rows int) error                   { return errNoTerminal() }
func (t *Terminal) Foreground(context.Context) (Foreground, error) {
	return Foreground{}, errNoTerminal()
}
func (t *Terminal) SignalForeground(context.Context, os.Signal) error { return errNoTerminal() }
func (t *Terminal) Updated() <-chan struct{}                          { return nil }
func (t *Terminal) Sandbox() *sandbox.Report                          { return nil }
func (t *Terminal) WaitOutput(ctx context.Context, from int64, max int) (Delta, error) {
	return Delta{}, errNoTerminal()
}
func (t *Terminal) Done() <-chan struct{} { return closedChan() }
func (t *Terminal) Wait(context.Context) (TerminalResult, error) {
	return TerminalResult{}, errNoTerminal()
}
func (t *Terminal) Terminate(context.Context) error { return errNoTerminal() }
func (t *Terminal) Close() error                    { return errNoTerminal() }
func (t *Terminal) ended() <-chan struct{}          { return closedChan() }
func (t *Terminal) end(context.Context, bool) error { return nil }
