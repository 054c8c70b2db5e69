//go:build !unix

package shell

import (
	"context"
	"syscall"

	"github.com/subkit/subkit/procinspect"
)

var (
	sigTerm = syscall.Signal(15)
	sigKill = syscall.Signal(9)
)

// signalMembers: sessions need terminals, which this platform lacks (Open fails first).
func (s *Session) signalMembers(context.Context, []procinspect.Proc, syscall.Signal) error {
	return &Error{Op: "signal", Kind: ErrUnsupported}
}
