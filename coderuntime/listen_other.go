//go:build !linux

package coderuntime

import (
	"fmt"
	"net"
	"path/filepath"
)

// listenControl listens on the control socket name in dir. The path must fit a socket address
// (104 bytes on macOS and the BSDs): a runtime root under a shorter Config.ServiceConfig.TempDir
// fixes a longer one.
func listenControl(dir, name string) (*net.UnixListener, func(), error) {
	path := filepath.Join(dir, name)
	if len(path) > maxSocketPath {
		return nil, nil, fmt.Errorf("control socket path %s is %d bytes, above the %d a socket address holds; "+
			"set Config.ServiceConfig.TempDir (or TMPDIR) to a shorter directory", path, len(path), maxSocketPath)
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	return ln, func() {}, err
}

// maxSocketPath is the longest socket path macOS and the BSDs take (sun_path is 104 bytes).
const maxSocketPath = 103
