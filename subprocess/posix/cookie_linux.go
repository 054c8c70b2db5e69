package posix

import (
	"os"

	"golang.org/x/sys/unix"
	"strconv"
	"syscall"
)

const canReadEnviron = true

// sameUser reports whether pid runs as this process's user (the owner of /proc/<pid>).
func sameUser(pid int) bool {
	fi, err := os.Stat("/proc/" + strconv.Itoa(pid))
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}

// startTokenNow is the start token (/proc/<pid>/stat starttime: clock ticks of CLOCK_BOOTTIME,
// at USER_HZ, which Linux fixes at 100 for /proc) a process started now would get, rounded
// down, so every process started later has a token at least as large. It costs no /proc read.
func startTokenNow() uint64 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts) != nil {
		return 0 // no fence rather than a wrong one
	}
	return uint64(ts.Nano()) / (1e9 / 100)
}
