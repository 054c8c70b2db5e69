//go:build unix && !linux

package posix

import (
	"errors"
	"os/exec"
)

// HasParentDeathSignal reports whether Spawner works on this OS.
const HasParentDeathSignal = false

// Spawner is Linux only; here NewSpawner's Start always fails.
type Spawner struct{}

func NewSpawner() *Spawner                 { return &Spawner{} }
func (*Spawner) Start(cmd *exec.Cmd) error { return errors.New("no parent-death signal on this OS") }
func (*Spawner) Close()                    {}
