//go:build unix

package posix

import (
	"context"
	"os"
	"syscall"
	"time"
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

// Poll back-off: the first probes come fast so short waits end within a few milliseconds, and
// the spacing grows with the wait so a process watched for hours costs next to nothing. It
// serves the waits that have no event to wait on (see Tree).
const pollFirst = 500 * time.Microsecond

func pollCap(waited time.Duration) time.Duration {
	switch {
	case waited < time.Second:
		return 2 * time.Millisecond
	case waited < 10*time.Second:
		return 10 * time.Millisecond
	case waited < time.Minute:
		return 50 * time.Millisecond
	}
	return 250 * time.Millisecond
}

// poll waits until alive reports false, probing with back-off, or returns ctx's error.
func poll(ctx context.Context, alive func() bool) error {
	start := time.Now()
	d := pollFirst
	var t *time.Timer
	for alive() {
		if t == nil {
			t = time.NewTimer(d)
			defer t.Stop()
		} else {
			t.Reset(d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		d = min(2*d, pollCap(time.Since(start)))
	}
	return nil
}
