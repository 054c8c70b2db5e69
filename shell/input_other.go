//go:build !linux

package shell

import "github.com/subkit/subkit/subprocess"

// inspectInput has no implementation here: a program waiting for terminal input is reported
// running until the yield. (On macOS the evidence exists: kinfo_proc's wait message,
// "ttyin", read through sysctl, and the pty's modes through TIOCGETA; it is not read yet.)
func inspectInput(subprocess.Foreground) (probe, error) { return probe{}, errNoProbe }
