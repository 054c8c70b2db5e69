package posix

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Exited is a child that has exited, and how; it is not reaped yet.
type Exited struct {
	Pid int
	Exit
}

// ExitSet learns of the exits of many children of this process with one epoll descriptor in
// the runtime poller: one goroutine waits for all of them and holds no OS thread, and each child
// costs one pidfd (no goroutine, no os.File). It reads each exit without reaping the child,
// which stays a zombie, its pid pinned, until Reap. It is safe for concurrent use.
type ExitSet struct {
	ep *os.File // the epoll descriptor; readable when a watched pidfd is

	mu     sync.Mutex
	fds    map[int]int // pid -> pidfd, until reaped
	closed bool
}

// NewExitSet returns an empty set.
func NewExitSet() (*ExitSet, error) {
	fd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("epoll non-blocking: %w", err)
	}
	return &ExitSet{ep: os.NewFile(uintptr(fd), "epoll"), fds: map[int]int{}}, nil
}

// Add watches p, a started child of this process, and takes it over: it duplicates the pidfd
// p holds (or opens one) and releases p, so the set is then the only way to reap the child
// (read p.Pid first: it reads -1 after).
func (s *ExitSet) Add(p *os.Process) error {
	pid := p.Pid
	fd := -1
	var derr error
	if herr := p.WithHandle(func(h uintptr) { fd, derr = unix.FcntlInt(h, unix.F_DUPFD_CLOEXEC, 0) }); herr != nil {
		// No pidfd in p: the child is unreaped, so its pid names it until it is reaped.
		fd, derr = unix.PidfdOpen(pid, 0)
		if derr == nil {
			unix.CloseOnExec(fd)
		}
	}
	if derr != nil {
		return fmt.Errorf("pidfd of %d: %w", pid, derr)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		unix.Close(fd)
		return errors.New("posix: the exit set is closed")
	}
	err := WithFd(s.ep, func(ep int) {
		err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(pid)})
		if err != nil {
			derr = fmt.Errorf("epoll_ctl add pidfd of %d: %w", pid, err)
		}
	})
	if err = errors.Join(err, derr); err != nil {
		unix.Close(fd)
		return err
	}
	s.fds[pid] = fd
	p.Release()
	return nil
}

// Wait returns once at least one watched child has exited: those children, each reported once.
// Once the set is closed it returns an error wrapping os.ErrClosed.
func (s *ExitSet) Wait() ([]Exited, error) {
	rc, err := s.ep.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("posix: wait for exits: %w", err)
	}
	var out []Exited
	var events [64]unix.EpollEvent
	err = rc.Read(func(ep uintptr) bool {
		n, err := unix.EpollWait(int(ep), events[:], 0)
		if err != nil || n == 0 {
			return false // EINTR, or nothing yet: wait for the poller
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, ev := range events[:n] {
			pid := int(ev.Fd)
			fd, ok := s.fds[pid]
			if !ok {
				continue
			}
			e, exited, err := peekExit(fd)
			if err == nil && !exited {
				continue
			}
			// Reported once: a pidfd stays readable after the exit.
			unix.EpollCtl(int(ep), unix.EPOLL_CTL_DEL, fd, nil)
			if err != nil {
				e = Exit{Code: -1}
			}
			out = append(out, Exited{Pid: pid, Exit: e})
		}
		return len(out) > 0
	})
	if err != nil {
		s.mu.Lock()
		closed := s.closed
		s.mu.Unlock()
		if closed {
			err = os.ErrClosed
		}
		return nil, fmt.Errorf("posix: wait for exits: %w", err)
	}
	return out, nil
}

// Pids lists the children of the set not yet reaped.
func (s *ExitSet) Pids() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	pids := make([]int, 0, len(s.fds))
	for pid := range s.fds {
		pids = append(pids, pid)
	}
	return pids
}

// Has reports whether pid is a child of the set not yet reaped.
func (s *ExitSet) Has(pid int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.fds[pid]
	return ok
}

// Reap reaps pid if it has exited and drops it from the set. It never waits: a child still
// running stays in the set, and Reap says so.
func (s *ExitSet) Reap(pid int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	fd, ok := s.fds[pid]
	if !ok {
		return fmt.Errorf("posix: %d is not a child in the exit set", pid)
	}
	info, err := waitPidfd(fd, unix.WEXITED|unix.WNOHANG, nil)
	if err != nil {
		return fmt.Errorf("posix: reap %d: %w", pid, err)
	}
	if _, err := decodeSigchld(info[:]); err != nil {
		return fmt.Errorf("posix: reap %d: it is still running", pid)
	}
	unix.Close(fd) // also drops it from the epoll set
	delete(s.fds, pid)
	return nil
}

// Close ends the set: a Wait in progress returns an error, and the children not reaped are
// left for the process to reap by pid. Closing twice is safe.
func (s *ExitSet) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for pid, fd := range s.fds {
		unix.Close(fd)
		delete(s.fds, pid)
	}
	return s.ep.Close()
}

// ChildExited reports whether pid, an unreaped child of this process, has exited; with reap it
// also reaps it. It never waits. An error says pid is no such child.
func ChildExited(pid int, reap bool) (bool, error) {
	opts := unix.WEXITED | unix.WNOHANG
	if !reap {
		opts |= unix.WNOWAIT
	}
	info, err := waitID(unix.P_PID, pid, opts, nil)
	if err != nil {
		return false, fmt.Errorf("waitid %d: %w", pid, err)
	}
	return *(*int32)(unsafe.Pointer(&info[siPid])) != 0, nil
}
