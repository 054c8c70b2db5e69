//go:build unix && !darwin

package subprocess

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/internal/posix"
)

// ptyMaster returns the master to read and write the terminal through, taking over f.
// creack/pty leaves the master in blocking mode; a non-blocking duplicate joins the
// runtime poller, so read deadlines and Close can stop a pending Read. (darwin keeps the
// master blocking: terminal_darwin.go.)
func ptyMaster(f *os.File) (*os.File, error) {
	defer f.Close()
	var fd int
	var derr error
	if err := posix.WithFd(f, func(raw int) { fd, derr = unix.Dup(raw) }); err != nil {
		return nil, err
	}
	if derr != nil {
		return nil, fmt.Errorf("dup pty master: %w", derr)
	}
	unix.CloseOnExec(fd)
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("pty master non-blocking: %w", err)
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), nil
}
