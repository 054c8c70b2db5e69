//go:build unix

package shell

import (
	"context"
	"errors"
	"syscall"

	"github.com/subkit/subkit/internal/posix"
	"github.com/subkit/subkit/procinspect"
)

var (
	sigTerm = syscall.SIGTERM
	sigKill = syscall.SIGKILL
)

// signalMembers sends sig to each process of procs by its exact identity (a process that has
// gone, or whose pid now names another, is skipped), never to the session's shell.
func (s *Session) signalMembers(ctx context.Context, procs []procinspect.Proc, sig syscall.Signal) error {
	var errs []error
	for _, p := range procs {
		if p.Pid == s.term.Pid() {
			continue
		}
		if _, err := posix.SignalIdentity(ctx, p.Identity, sig); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
