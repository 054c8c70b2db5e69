package guard

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/procinspect"
	"github.com/subkit/subkit/subprocess/posix"
)

// HostVar names the environment variable through which the host tells its guard its pid: a
// guard whose parent is already another process starts by ending everything.
const HostVar = "SUBKIT_GUARD_HOST"

// reapEvery is how often, at most, the guard lists its children to reap adopted processes.
const reapEvery = 10 * time.Millisecond

// killWait bounds the wait for what SIGKILL must end; a process in uninterruptible sleep may
// take longer, and the guard then exits anyway.
const killWait = 10 * time.Second

// server is the guard's state. mu guards leaders and root: the reading goroutine starts and
// reaps trees, the main loop reaps adopted processes and ends everything.
type server struct {
	mu      sync.Mutex
	conn    *net.UnixConn
	wmu     sync.Mutex // serialises writes to conn
	grace   time.Duration
	leaders map[int]*posix.Child // started and not yet reaped at the host's request
	root    string               // the host's runtime root, removed when the host is gone
}

// Serve runs the guard on sock (its end of the socket pair) until the host is gone or asks it
// to close, and returns the process's exit status. It is what subprocess.HelperMain runs in a
// process started as the guard.
func Serve(sock *os.File) int {
	// The guard holds little but a watch per tree: a small heap goal keeps it small.
	debug.SetGCPercent(20)
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return 3
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, unix.SIGCHLD, unix.SIGTERM, unix.SIGHUP, unix.SIGINT)
	c, err := conn(sock)
	if err != nil {
		return 3
	}
	s := &server{conn: c, grace: 3 * time.Second, leaders: map[int]*posix.Child{}}
	msgs := make(chan *message)
	gone := make(chan struct{}) // the host's end of the socket is closed: the host is gone
	go s.read(msgs, gone)
	if host, _ := strconv.Atoi(os.Getenv(HostVar)); host != 0 && os.Getppid() != host {
		s.hostGone() // the host died before the parent-death signal was set
		return 0
	}
	var reap <-chan time.Time // a pending reap of adopted processes
	for {
		select {
		case <-msgs: // the host asked to close
			s.endAll()
			return 0
		case <-reap:
			reap = nil
			s.reapAdopted()
		case sig := <-sigs:
			if sig == unix.SIGCHLD {
				// Every leader's exit raises SIGCHLD too: the children are listed at most once
				// per reapEvery, and an adopted zombie waits that long at most.
				if reap == nil {
					reap = time.After(reapEvery)
				}
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
			if ch, ok := s.leaders[m.Pid]; ok {
				ch.Reap()
				delete(s.leaders, m.Pid)
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
	cmd := &exec.Cmd{Path: m.Path, Args: m.Args, Dir: m.Dir, Env: m.Env,
		Stdin: m.files[0], Stdout: m.files[1], Stderr: m.files[2]}
	if m.Setsid {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: m.Setctty}
	} else {
		cmd.SysProcAttr = posix.SysProcAttr()
	}
	if err := cmd.Start(); err != nil {
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
	pid := cmd.Process.Pid
	child := posix.WatchChild(cmd)
	s.leaders[pid] = child
	a := &message{Op: opStarted, ID: m.ID, Pid: pid}
	if p, err := procinspect.Lookup(context.Background(), pid); err == nil {
		a.Start = p.Start // the host need not read it
	}
	s.write(a)
	go func() { // the exit goes straight to the host: its answer was written first
		e, _, err := child.Wait()
		if err != nil {
			e = posix.Exit{Code: -1}
		}
		s.write(&message{Op: opExit, Pid: pid, Code: e.Code, Signal: int(e.Signal)})
	}()
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

// reapAdopted reaps the processes re-parented to the guard that have exited; the leaders stay
// for the host to have reaped.
// The list of children is read without the lock, so a spawn need not wait for it; a child
// started meanwhile is a leader by the time the lock is taken for it.
func (s *server) reapAdopted() {
	for _, pid := range children() {
		s.mu.Lock()
		s.reapIfAdopted(pid)
		s.mu.Unlock()
	}
}

func (s *server) reapAdoptedLocked() {
	for _, pid := range children() {
		s.reapIfAdopted(pid)
	}
}

// reapIfAdopted reaps pid if it is an adopted process that has exited. Called with s.mu held.
func (s *server) reapIfAdopted(pid int) {
	if _, leader := s.leaders[pid]; leader {
		return
	}
	var info [128]byte
	unix.Waitid(unix.P_PID, pid, (*unix.Siginfo)(unsafe.Pointer(&info)), unix.WEXITED|unix.WNOHANG, nil)
}

// endAll ends every tree the guard started (its group; the held leaders keep the numbers the
// trees') and every process it adopted (its children, which it has not reaped): SIGTERM and
// SIGCONT, then SIGKILL to what is left after the grace, and again to processes re-parented
// to it meanwhile. Then it reaps them all.
func (s *server) endAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	signalAll := func(sig syscall.Signal) {
		for pid := range s.leaders {
			unix.Kill(-pid, sig)
			unix.Kill(pid, sig)
		}
		for _, pid := range children() {
			unix.Kill(pid, sig)
		}
	}
	deadline := time.Now().Add(s.grace)
	sig := unix.SIGTERM
	for {
		signalAll(sig)
		if sig == unix.SIGTERM {
			signalAll(unix.SIGCONT)
		}
		s.reapAdoptedLocked()
		if !s.anyLive() {
			break
		}
		if time.Now().After(deadline) {
			if sig == unix.SIGKILL {
				break
			}
			sig, deadline = unix.SIGKILL, time.Now().Add(killWait)
		}
		time.Sleep(5 * time.Millisecond)
	}
	for pid, ch := range s.leaders {
		ch.Reap()
		delete(s.leaders, pid)
	}
	s.reapAdoptedLocked()
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
		if _, ok := s.leaders[p.Pgid]; ok || p.PPid == me {
			return true
		}
	}
	return false
}

// children lists the guard's child processes: the children of each of its threads.
func children() []int {
	var pids []int
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	for _, path := range tasks {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}
