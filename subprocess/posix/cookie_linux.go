package posix

import (
	"os"
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
