//go:build unix && !linux && !darwin

package posix

import (
	"errors"
	"os"
)

// pidWatch has no implementation here: the Tree waits for its leader the way os/exec does
// (a blocked thread per tree), reaping it at once, and watches its group by polling.
type pidWatch struct{}

var errNoPidWatch = errors.New("no process exit watch on this OS")

func openPidWatch(pid int, child bool) (*pidWatch, error) { return nil, errNoPidWatch }
func watchChild(p *os.Process) (*pidWatch, bool, error)   { return nil, false, errNoPidWatch }
func (*pidWatch) reap() error                             { return errNoPidWatch }
func (*pidWatch) wait() error                             { return errNoPidWatch }
func (*pidWatch) exit() (Exit, error)                     { return Exit{}, errNoPidWatch }
func (*pidWatch) close()                                  {}
