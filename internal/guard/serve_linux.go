package guard

import (
	"context"
	"errors"
	"fmt"
	"github.com/subkit/subkit/sandbox"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/internal/backoff"
	"github.com/subkit/subkit/internal/ending"
	"github.com/subkit/subkit/internal/posix"
	"github.com/subkit/subkit/procinspect"
)

// HostVar names the environment variable through which the host tells its guard its pid: a
// guard whose parent is already another process starts by ending everything.
const HostVar = "SUBKIT_GUARD_HOST"

// The guard looks at its children (to reap the adopted ones that exited and announce the new
// ones) reapEvery after a SIGCHLD or a spawn, then, while nothing happens, less and less often,
// up to every scanLast.
const (
	reapEvery = 10 * time.Millisecond
	scanLast  = time.Second
)

// server is the guard's state. mu orders what the guard does and says: the reading goroutine
// starts trees and reaps leaders, the exit relay reports leaders' exits, the main loop tends
// adopted processes and ends everything. Every message the guard writes is written under mu,
// so the host learns of a leader before its exit, and of what a leader left before its exit.
type server struct {
	mu      sync.Mutex
	conn    *net.UnixConn
	wmu     sync.Mutex // serialises writes to conn
	grace   time.Duration
	exits   *posix.ExitSet // the leaders: started and not yet reaped at the host's request
	adopted map[int]bool   // adopted processes announced to the host and not yet reaped
	root    string         // the host's runtime root, removed when the host is gone
	lastEnv []string       // the environment of the last spawn, which the next one is sent against
	poke    chan struct{}  // a tree was started: look at the children soon
	broken  chan struct{}  // closed when exits can no longer be learnt
}

// Serve runs the guard on sock (its end of the socket pair) until the host is gone or asks it
// to close, and returns the process's exit status. It is what subprocess.HelperMain runs in a
// process started as the guard.
func Serve(sock *os.File) int {
	// The guard holds little but a pidfd per tree: a small heap goal keeps it small.
	debug.SetGCPercent(20)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fail(err)
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGCHLD, unix.SIGTERM, unix.SIGHUP, unix.SIGINT)
	c, err := conn(sock)
	if err != nil {
		return fail(err)
	}
	exits, err := posix.NewExitSet()
	if err != nil {
		return fail(err)
	}
	defer exits.Close()
	s := &server{conn: c, grace: 3 * time.Second, exits: exits, adopted: map[int]bool{},
		poke: make(chan struct{}, 1), broken: make(chan struct{})}
	msgs := make(chan *message)
	gone := make(chan struct{}) // the host's end of the socket is closed: the host is gone
	go s.read(msgs, gone)
	go s.relayExits()
	if host, _ := strconv.Atoi(os.Getenv(HostVar)); host != 0 && os.Getppid() != host {
		s.hostGone() // the host died before the parent-death signal was set
		return 0
	}
	trim() // what starting the whole binary mapped and allocated, the guard does not use
	looks := backoff.Policy{First: reapEvery, Max: scanLast}
	sched := looks.Start()
	every := sched.Next()
	scan := time.NewTimer(every)
	due := time.Now().Add(every)
	busy := false    // something happened since the last trim
	soon := func() { // something happened: look within reapEvery, and often again after
		busy = true
		sched = looks.Start()
		if every := sched.Next(); time.Until(due) > every {
			scan.Reset(every)
			due = time.Now().Add(every)
		}
	}
	for {
		select {
		case <-msgs: // the host asked to close
			s.endAll()
			return 0
		case <-scan.C:
			s.scan()
			if busy && every >= scanLast { // idle for a while after a burst
				trim()
				busy = false
			}
			every = sched.Next()
			scan.Reset(every)
			due = time.Now().Add(every)
		case <-s.poke:
			soon()
		case <-s.broken: // the host would wait for exits forever: end it all, and say so by exiting
			s.endAll()
			return 3
		case sig := <-sigs:
			if sig == unix.SIGCHLD {
				// Every leader's exit raises SIGCHLD too: the children are listed at most
				// once per reapEvery, and an adopted zombie waits that long at most.
				soon()
				continue
			}
			s.hostGone() // the parent-death signal, or a stop request
			return 0
		case <-gone:
			s.hostGone()
			return 0
		}
	}
}

// fail reports why the guard cannot run, on the stderr it shares with the host.
func fail(err error) int {
	fmt.Fprintln(os.Stderr, "subkit guard:", err)
	return 3
}

// read serves the host's requests until the socket fails, then closes gone. It starts and
// reaps trees itself, so a spawn costs no hand-off; a close goes to the main loop.
func (s *server) read(closing chan<- *message, gone chan<- struct{}) {
	defer close(gone)
	for {
		m, files, err := recv(s.conn)
		if err != nil {
			return
		}
		if m.Op != opSpawn {
			closeAll(files)
		}
		s.mu.Lock()
		switch m.Op {
		case opHello:
			if m.Grace > 0 {
				s.grace = time.Duration(m.Grace)
			}
		case opRoot:
			s.root = m.Root
		case opSpawn:
			m.files = files
			s.spawn(m)
		case opReap:
			if err := s.exits.Reap(m.Pid); err != nil {
				fmt.Fprintln(os.Stderr, "subkit guard:", err) // the host asks only after the exit
			}
		}
		s.mu.Unlock()
		if m.Op == opClose {
			closing <- m
			return
		}
	}
}

func (s *server) write(m *message) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	send(s.conn, m, nil) // a host that is gone is noticed by read
}

// spawn starts one tree and answers with its leader's pid, or the error. Called with s.mu held.
func (s *server) spawn(m *message) {
	defer closeAll(m.files)
	if len(m.files) != 3 {
		s.write(&message{Op: opStarted, ID: m.ID, Errno: int(unix.EINVAL), Err: "spawn needs stdin, stdout and stderr"})
		return
	}
	if m.EnvKeep < 0 || m.EnvKeep > len(s.lastEnv) {
		s.write(&message{Op: opStarted, ID: m.ID, Errno: int(unix.EINVAL), Err: "spawn keeps more of the last environment than there was"})
		return
	}
	env := make([]string, 0, m.EnvKeep+len(m.Env)) // never nil: nil would pass on the guard's own
	env = append(append(env, s.lastEnv[:m.EnvKeep]...), m.Env...)
	s.lastEnv = env
	cmd := &exec.Cmd{Path: m.Path, Args: m.Args, Dir: m.Dir, Env: env,
		Stdin: m.files[0], Stdout: m.files[1], Stderr: m.files[2]}
	if m.Setsid {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: m.Setctty}
	} else {
		cmd.SysProcAttr = posix.SysProcAttr()
	}
	sandbox.SetNamespaces(cmd.SysProcAttr, m.Clone)
	pid := 0
	err := cmd.Start()
	if err == nil {
		pid = cmd.Process.Pid // Add releases the Process
		if err = s.exits.Add(cmd.Process); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}
	if err != nil {
		a := &message{Op: opStarted, ID: m.ID, Err: err.Error()}
		var errno syscall.Errno
		if errors.As(err, &errno) {
			a.Errno = int(errno)
		} else if errors.Is(err, os.ErrNotExist) {
			a.Errno = int(unix.ENOENT)
		} else {
			a.Errno = int(unix.EIO)
		}
		s.write(a)
		return
	}
	a := &message{Op: opStarted, ID: m.ID, Pid: pid, Start: startOf(pid)} // the host need not read it
	s.write(a)
	select {
	case s.poke <- struct{}{}:
	default:
	}
}

// relayExits reports each leader's exit to the host, after what the leader left behind: its
// orphans are re-parented to the guard before its exit can be seen.
func (s *server) relayExits() {
	for {
		exits, err := s.exits.Wait()
		if errors.Is(err, os.ErrClosed) {
			return // the guard is exiting
		}
		if err != nil {
			fail(err)
			close(s.broken)
			return
		}
		pids := children()
		s.mu.Lock()
		s.tend(pids, false)
		for _, e := range exits {
			s.write(&message{Op: opExit, Pid: e.Pid, Code: e.Code, Signal: int(e.Signal),
				User: int64(e.Usage.User), System: int64(e.Usage.System), MaxRSS: e.Usage.MaxRSS})
		}
		s.mu.Unlock()
	}
}

// hostGone ends everything and removes what the host left on disk.
func (s *server) hostGone() {
	s.endAll()
	s.mu.Lock()
	root := s.root
	s.mu.Unlock()
	if root != "" {
		os.RemoveAll(root)
	}
}

// scan reaps the adopted processes that have exited and announces the new ones. The list of
// children is read without the lock, so a spawn need not wait for it; a child started
// meanwhile is a leader by the time the lock is taken.
func (s *server) scan() {
	pids := children()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tend(pids, true)
}

// tend announces to the host each adopted process among pids that it has not announced yet
// (its identity) and, with reap, reaps those that have exited (and says so). Leaders are left
// alone. Called with s.mu held.
func (s *server) tend(pids []int, reap bool) {
	for _, pid := range pids {
		if s.exits.Has(pid) || !reap && s.adopted[pid] {
			continue
		}
		exited, err := posix.ChildExited(pid, reap)
		if err != nil {
			continue // not a child any more: a leader the host had reaped
		}
		switch {
		case exited && reap:
			if s.adopted[pid] {
				delete(s.adopted, pid)
				s.write(&message{Op: opLeft, Pid: pid})
			}
		case !s.adopted[pid]:
			s.adopted[pid] = true
			s.write(&message{Op: opAdopted, Pid: pid, Start: startOf(pid)})
		}
	}
}

// startOf is pid's start token, or 0 when it cannot be read.
func startOf(pid int) uint64 {
	p, err := procinspect.Lookup(context.Background(), pid)
	if err != nil {
		return 0
	}
	return p.Start
}

// endAll ends every tree the guard started (its group; the held leaders keep the numbers the
// trees') and every process it adopted (its children, which it has not reaped), as
// ending.Policy.End does: SIGTERM and SIGCONT, then SIGKILL to what is left after the grace,
// and the signal in force again to processes re-parented to it meanwhile. Then it reaps them
// all. What could not be ended is said on stderr.
func (s *server) endAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := (ending.Policy{Grace: s.grace}).End(context.Background(), &everything{s: s}); err != nil {
		fail(err)
	}
	for _, pid := range s.exits.Pids() {
		s.exits.Reap(pid) // a leader still running after the kill wait is left to init
	}
	s.tend(children(), true)
}

// everything is the ending.Target of endAll. Every pid it signals is held: a leader the guard
// has not reaped, or a child of the guard it has not reaped, so no number it uses can have
// been reused. Called with s.mu held.
type everything struct {
	s    *server
	step ending.Step
}

func (e *everything) Signal(_ context.Context, step ending.Step) error {
	e.step = step
	e.signal()
	return nil
}

// signal sends the signals of the step in force; a process already gone is no error, and
// the guard may signal everything it holds.
func (e *everything) signal() {
	sigs := []syscall.Signal{unix.SIGTERM, unix.SIGCONT}
	if e.step == ending.Kill {
		sigs = []syscall.Signal{unix.SIGKILL}
	}
	for _, sig := range sigs {
		for _, pid := range e.s.exits.Pids() {
			unix.Kill(-pid, sig)
			unix.Kill(pid, sig)
		}
		for _, pid := range children() {
			unix.Kill(pid, sig)
		}
	}
}

// Alive reaps the adopted processes that exited, signals those re-parented to the guard
// since the last look with the step in force (its rediscovery), and reports whether a live
// process remains in a tree's group or among the guard's children.
func (e *everything) Alive(context.Context) (bool, error) {
	e.s.tend(children(), true)
	e.signal()
	return e.s.anyLive(), nil
}

// anyLive reports whether a live process remains in a tree's group or among the guard's
// children.
func (s *server) anyLive() bool {
	tab, err := procinspect.Snapshot(context.Background())
	if err != nil {
		return true
	}
	me := os.Getpid()
	for _, p := range tab.Procs() {
		if p.Zombie {
			continue
		}
		if s.exits.Has(p.Pgid) || p.PPid == me {
			return true
		}
	}
	return false
}

// children lists the guard's child processes as its main thread has them: every process
// re-parented to the guard (the kernel gives orphans to a subreaper's first live thread), and
// the leaders it started from that thread. Leaders started from other threads are in the
// ExitSet.
func children() []int {
	b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(os.Getpid()) + "/children")
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
