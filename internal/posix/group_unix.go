//go:build unix

package posix

import (
	"os"
	"syscall"
)

// SysProcAttr returns the attributes that detach a child into a process group of its own,
// whose id is the child's pid.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// WithFd runs fn with f's descriptor without switching f to blocking mode (as f.Fd would).
func WithFd(f *os.File, fn func(fd int)) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	return rc.Control(func(fd uintptr) { fn(int(fd)) })
}
