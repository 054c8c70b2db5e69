package posix

import (
	"context"
	"errors"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/procinspect"
)

// SignalIdentity sends sig to the process id names, only if the pid still belongs to it
// (same start token). It reports whether the signal was sent. On Linux there is no window
// for a reused pid: the process is pinned with a pidfd before its start time is checked, and
// the signal goes through the pidfd.
func SignalIdentity(ctx context.Context, id procinspect.Identity, sig syscall.Signal) (bool, error) {
	fd, err := unix.PidfdOpen(id.Pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer unix.Close(fd)
	if alive, err := procinspect.Alive(ctx, id); err != nil || !alive {
		return false, err
	}
	if err := unix.PidfdSendSignal(fd, sig, nil, 0); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}
