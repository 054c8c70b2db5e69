//go:build !unix

package subprocess

import (
	"context"
	"errors"
	"os"
	"os/exec"

	"github.com/subkit/subkit/procinspect"
)

// ttyState is a terminal's state; this platform has no terminals, so no Handle has one.
type ttyState struct {
	shell procinspect.Identity
}

func errNoTTY() error {
	return &Error{Op: "terminal", Kind: ErrUnsupported, Err: errors.New("no terminals on " + platformName)}
}

func (s *Service) startTTY(h *Handle, cmd *exec.Cmd, c confined, t TTY) error {
	return &Error{Op: "spawn", Name: h.argv[0], Kind: ErrUnsupported, Err: errors.New("no terminals on " + platformName)}
}

func (x *ttyState) write([]byte) (int, error) { return 0, errNoTTY() }
func (x *ttyState) resize(int, int) error     { return errNoTTY() }
func (x *ttyState) foreground(context.Context, string) (Foreground, error) {
	return Foreground{}, errNoTTY()
}
func (x *ttyState) signalForeground(context.Context, string, os.Signal) error {
	return errNoTTY()
}
func (h *Handle) endTTY() error { return errNoTTY() }
