//go:build unix

package bash

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockSupported: executors mark their spill directories in use with flock(2), which conflicts
// between any two open files, also within one process.
const lockSupported = true

// tryLock takes an exclusive lock on f without blocking; false means another holder has it.
func tryLock(f *os.File) (bool, error) {
	err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EWOULDBLOCK):
		return false, nil
	}
	return false, err
}
