//go:build unix

package subprocess

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// readNow reads what the non-blocking r holds now, without waiting and whatever r's read
// deadline says. An empty pipe gives EAGAIN; a pipe no one holds any more gives io.EOF.
func readNow(r *os.File, buf []byte) (int, error) {
	rc, err := r.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var rerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			if n, rerr = unix.Read(int(fd), buf); rerr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return 0, err
	}
	switch {
	case rerr != nil:
		return 0, rerr
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}
