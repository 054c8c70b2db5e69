package posix

import (
	"os/exec"
	"runtime"
	"syscall"
)

// HasParentDeathSignal reports whether Spawner works on this OS.
const HasParentDeathSignal = true

// Spawner starts commands from one locked OS thread that lives until Close. Linux sends a
// child's parent-death signal when the thread that created the child exits, not the process
// (golang/go #27505), so children started from a thread that lives as long as the Service die
// when the host process dies, and not when some goroutine's thread happens to end.
type Spawner struct {
	reqs chan func()
	done chan struct{}
}

// NewSpawner starts the spawning thread.
func NewSpawner() *Spawner {
	s := &Spawner{reqs: make(chan func()), done: make(chan struct{})}
	go s.loop()
	return s
}

func (s *Spawner) loop() {
	runtime.LockOSThread() // never unlocked: the thread ends with this goroutine
	defer close(s.done)
	for f := range s.reqs {
		f()
	}
}

// Start starts cmd on the spawning thread with SIGKILL as its parent-death signal, unless cmd
// names another one.
func (s *Spawner) Start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if cmd.SysProcAttr.Pdeathsig == 0 {
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	errc := make(chan error, 1)
	s.reqs <- func() { errc <- cmd.Start() }
	return <-errc
}

// Close ends the spawning thread. Children still alive then receive SIGKILL, so the
// Service calls it only after its trees are gone.
func (s *Spawner) Close() {
	close(s.reqs)
	<-s.done
}
