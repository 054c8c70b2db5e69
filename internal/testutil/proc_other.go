//go:build !linux

package testutil

import (
	"os"
	"syscall"
	"testing"
)

// Without /proc the checks have nothing to read: they pass vacuously off Linux, where the
// suite is not run in CI.

func Marked(mark string) []int   { return nil }
func Tagged(tag string) []int    { return nil }
func killPid(pid int)            {}
func describe(pids []int) string { return "" }
func countFDs() int              { return -1 }
func listFDs() string            { return "" }

// CanReusePids skips the test: forcing a pid needs Linux's ns_last_pid.
func CanReusePids(t testing.TB) { t.Skip("forcing a pid needs Linux's ns_last_pid") }

// ProcessWithPid skips the test (see CanReusePids).
func ProcessWithPid(t testing.TB, pid int, sys *syscall.SysProcAttr) *os.Process {
	t.Skip("forcing a pid needs Linux's ns_last_pid")
	return nil
}
