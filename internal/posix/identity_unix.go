//go:build unix && !linux

package posix

import (
	"context"
	"errors"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/procinspect"
)

// SignalIdentity sends sig to the process id names, only if the pid still belongs to it
// (same start token). It reports whether the signal was sent. Without pidfds a pid could in
// principle be reused between the check and the signal; the window is a few microseconds.
func SignalIdentity(ctx context.Context, id procinspect.Identity, sig syscall.Signal) (bool, error) {
	if alive, err := procinspect.Alive(ctx, id); err != nil || !alive {
		return false, err
	}
	if err := unix.Kill(id.Pid, sig); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}
