package subprocess

import (
	"os"

	"golang.org/x/sys/unix"
)

// growPipe asks for a pipe buffer of size bytes. Refusals (the user's pipe quota, or
// /proc/sys/fs/pipe-max-size) leave the pipe as it is: only speed depends on it.
func growPipe(r *os.File, size int) {
	if rc, err := r.SyscallConn(); err == nil {
		rc.Control(func(fd uintptr) { unix.FcntlInt(fd, unix.F_SETPIPE_SZ, size) })
	}
}
