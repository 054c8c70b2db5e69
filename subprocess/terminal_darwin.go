package subprocess

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/internal/posix"
)

// ptyMaster returns the master to read and write the terminal through, taking over f.
//
// On macOS the master stays blocking and out of the runtime poller: kqueue reports a pty
// master readable when it is not, so a non-blocking master makes reads spin at 100% CPU
// (creack/pty reverted its non-blocking masters for this, creack/pty #174). creack/pty
// hands out a blocking master; should a version hand out a non-blocking one, a blocking
// duplicate replaces it. posix.WithFd leaves the mode as it is, so the resizes and
// foreground-group reads through it do not change it either.
//
// What that costs: the reading goroutine holds an OS thread while it waits, and read
// deadlines do not apply to a blocking file, so cutting the output (after Terminate, at
// Close) does not stop a pending read, nor does closing the master (creack/pty #88). The
// read ends with end of file or EIO once the last process holding the terminal has
// closed it: at once after a Terminate that ended every process of the terminal; when
// some process the terminal's cleanup did not reach still holds it, Close returns after
// its bound and that one read goes on until the process lets go.
func ptyMaster(f *os.File) (*os.File, error) {
	var flags int
	var ferr error
	if err := posix.WithFd(f, func(fd int) { flags, ferr = unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0) }); err != nil {
		f.Close()
		return nil, fmt.Errorf("pty master: %w", err)
	}
	if ferr != nil {
		f.Close()
		return nil, fmt.Errorf("pty master mode: %w", ferr)
	}
	if flags&unix.O_NONBLOCK == 0 {
		return f, nil // blocking already, so os.NewFile kept it out of the poller
	}
	defer f.Close()
	var fd int
	var derr error
	if err := posix.WithFd(f, func(raw int) { fd, derr = unix.Dup(raw) }); err != nil {
		return nil, fmt.Errorf("pty master: %w", err)
	}
	if derr != nil {
		return nil, fmt.Errorf("dup pty master: %w", derr)
	}
	unix.CloseOnExec(fd)
	// O_NONBLOCK belongs to the open file, which the duplicate shares: clearing it here
	// makes the master blocking, and os.NewFile keeps a blocking descriptor out of the
	// poller.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("pty master blocking: %w", err)
	}
	return os.NewFile(uintptr(fd), "/dev/ptmx"), nil
}
