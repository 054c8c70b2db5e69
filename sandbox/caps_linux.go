package sandbox

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// dropCapabilities empties the calling thread's capability sets (ambient, bounding,
// inheritable, permitted, effective), so that the program it execs has none, root included.
// The bounding set needs CAP_SETPCAP to be emptied; without it a root program gets back, at
// exec, the capabilities of the bounding set (the probe reads what the program is left with).
func dropCapabilities() error {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clearing the ambient capabilities: %w", err)
	}
	if data[0].Effective&(1<<unix.CAP_SETPCAP) != 0 {
		for c := 0; ; c++ {
			err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
			if errors.Is(err, unix.EINVAL) {
				break // past the last capability
			}
			if err != nil {
				return fmt.Errorf("dropping capability %d from the bounding set: %w", c, err)
			}
		}
	}
	data = [2]unix.CapUserData{}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}
