//go:build unix

package lsp

import (
	"errors"
	"syscall"
)

// openNoFollow: the last component of the path is not followed if it is a symbolic link, and
// opening a FIFO does not wait for a writer.
const openNoFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// isSymlinkRefusal says err is open(2) refusing a symbolic link under O_NOFOLLOW: ELOOP
// (Linux, macOS), EMLINK (FreeBSD). Elsewhere the refusal is returned as the system's error.
func isSymlinkRefusal(err error) bool {
	return errors.Is(err, syscall.ELOOP) || errors.Is(err, syscall.EMLINK)
}
