package testutil

import (
	"os"
	"strconv"
	"syscall"
	"testing"
)

// lastPidFile sets the pid the kernel hands out next (less one); writing it needs root.
const lastPidFile = "/proc/sys/kernel/ns_last_pid"

// CanReusePids skips the test unless it may set the pid the kernel hands out next.
func CanReusePids(t testing.TB) {
	t.Helper()
	f, err := os.OpenFile(lastPidFile, os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("cannot force pid reuse without writing %s: %v", lastPidFile, err)
	}
	f.Close()
}

// ProcessWithPid starts `sleep 1000` with attributes sys (nil for none) as process pid, by
// setting ns_last_pid just before the fork; it skips the test when other forks keep taking
// the number first. The process is killed and reaped at cleanup.
func ProcessWithPid(t testing.TB, pid int, sys *syscall.SysProcAttr) *os.Process {
	t.Helper()
	for try := 0; try < 50; try++ {
		if err := os.WriteFile(lastPidFile, []byte(strconv.Itoa(pid-1)), 0); err != nil {
			t.Fatal(err)
		}
		p, err := os.StartProcess("/bin/sleep", []string{"sleep", "1000"}, &os.ProcAttr{Sys: sys})
		if err != nil {
			t.Fatal(err)
		}
		if p.Pid == pid {
			t.Cleanup(func() { p.Kill(); p.Wait() })
			return p
		}
		p.Kill()
		p.Wait()
	}
	t.Skip("could not get the old pid back (other processes forked in between)")
	return nil
}
