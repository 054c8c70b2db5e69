package sandbox

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// setLimits sets each non-zero limit as both the soft and the hard limit (RLIMIT_CPU: the hard
// one second above, so that SIGXCPU comes before SIGKILL). It goes through package syscall,
// which then stops restoring the open-files limit the Go runtime raised at start.
func setLimits(l Limits) error {
	for _, c := range []struct {
		name     string
		resource int
		v        uint64
	}{
		{"CPUSeconds", syscall.RLIMIT_CPU, l.CPUSeconds},
		{"FileSizeBytes", syscall.RLIMIT_FSIZE, l.FileSizeBytes},
		{"OpenFiles", syscall.RLIMIT_NOFILE, l.OpenFiles},
		{"Processes", unix.RLIMIT_NPROC, l.Processes},
		{"AddressSpaceBytes", syscall.RLIMIT_AS, l.AddressSpaceBytes},
	} {
		if c.v == 0 {
			continue
		}
		lim := syscall.Rlimit{Cur: c.v, Max: c.v}
		if c.resource == syscall.RLIMIT_CPU {
			lim.Max = c.v + 1
		}
		if err := syscall.Setrlimit(c.resource, &lim); err != nil {
			return fmt.Errorf("setrlimit %s %d: %w", c.name, c.v, err)
		}
	}
	return nil
}
