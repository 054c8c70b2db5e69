package coderuntime

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
)

// listenControl listens on the control socket name in dir. A socket path is limited to 107
// bytes; a longer one is reached through the directory's descriptor (/proc/self/fd/N/name), so
// a deep temp dir never stops a session. The returned func releases what it opened.
func listenControl(dir, name string) (*net.UnixListener, func(), error) {
	path := filepath.Join(dir, name)
	if len(path) <= maxSocketPath {
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		return ln, func() {}, err
	}
	d, err := os.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: fmt.Sprintf("/proc/self/fd/%d/%s", d.Fd(), name), Net: "unix"})
	if err != nil {
		return nil, nil, errors.Join(err, d.Close())
	}
	return ln, func() { d.Close() }, nil // a directory opened for reading: its close reports nothing
}

// maxSocketPath is the longest socket path Linux takes (sun_path is 108 bytes with its NUL).
const maxSocketPath = 107
