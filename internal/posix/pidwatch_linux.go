package posix

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// pidWatch learns that one process has exited from a pidfd in the runtime poller: a pidfd
// becomes readable when its process exits, so a goroutine waiting on it parks in the poller
// and holds no OS thread. The pid is pinned as long as the watch is open only if the process
// is an unreaped child; for any other process the pidfd still names exactly the process it was
// opened for.
type pidWatch struct {
	f      *os.File
	closed atomic.Bool
}

// openPidWatch opens a watch on pid; child says whether pid is an unreaped child of this
// process (on Linux any process can be watched the same way).
func openPidWatch(pid int, child bool) (*pidWatch, error) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("pidfd_open %d: %w", pid, err)
	}
	unix.CloseOnExec(fd)
	return &pidWatch{f: os.NewFile(uintptr(fd), "pidfd")}, nil
}

// watchChild watches a child started by os/exec with one descriptor in all: it takes over the
// pidfd os.Process holds and releases the Process, so the watch is then the only way to reap
// the child (owned is true). Where os.Process holds no pidfd it opens a watch of its own and
// leaves the Process as it is (owned is false).
func watchChild(p *os.Process) (w *pidWatch, owned bool, err error) {
	fd := -1
	var derr error
	if herr := p.WithHandle(func(h uintptr) { fd, derr = unix.FcntlInt(h, unix.F_DUPFD_CLOEXEC, 0) }); herr != nil {
		w, err := openPidWatch(p.Pid, true)
		return w, false, err
	}
	if derr != nil {
		return nil, false, fmt.Errorf("dup pidfd: %w", derr)
	}
	// The duplicate shares the open file description, and so its O_NONBLOCK, with the
	// Process's descriptor, which Release closes at once.
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return nil, false, fmt.Errorf("pidfd non-blocking: %w", err)
	}
	p.Release()
	return &pidWatch{f: os.NewFile(uintptr(fd), "pidfd")}, true, nil
}

// reap reaps the exited child and closes the watch.
func (w *pidWatch) reap() error {
	defer w.close()
	var werr error
	err := WithFd(w.f, func(fd int) { _, werr = waitPidfd(fd, unix.WEXITED, nil) })
	if err = errors.Join(err, werr); err != nil {
		return fmt.Errorf("waitid: %w", err)
	}
	return nil
}

// wait returns once the process has exited (it is then a zombie or gone), or with an error
// when the watch was closed.
func (w *pidWatch) wait() error {
	rc, err := w.f.SyscallConn()
	if err != nil {
		return err
	}
	exited := func(fd uintptr) bool {
		for {
			n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
			if err != unix.EINTR {
				return n > 0 || err != nil
			}
		}
	}
	err = rc.Read(exited)
	if err != nil && !w.closed.Load() {
		// The descriptor is not in the poller (an old kernel's pidfd cannot be polled by
		// epoll): wait in poll(2) instead, holding a thread while it waits.
		err = rc.Control(func(fd uintptr) {
			for {
				_, perr := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, -1)
				if perr != unix.EINTR {
					return
				}
			}
		})
	}
	return err
}

// exit reads how the process ended without reaping it (waitid with WNOWAIT). It works for
// an exited child of this process; otherwise it reports why it cannot.
func (w *pidWatch) exit() (Exit, error) {
	var e Exit
	var exited bool
	var werr error
	err := WithFd(w.f, func(fd int) { e, exited, werr = peekExit(fd) })
	if err = errors.Join(err, werr); err != nil {
		return Exit{}, err
	}
	if !exited {
		return Exit{}, errors.New("waitid: the process has not exited")
	}
	return e, nil
}

// peekExit reads how the child behind pidfd ended, and what it used, without reaping it;
// exited is false while it runs.
func peekExit(pidfd int) (e Exit, exited bool, err error) {
	var ru unix.Rusage // with WNOWAIT too, the kernel fills it (the zombie's and its children's)
	info, err := waitPidfd(pidfd, unix.WEXITED|unix.WNOWAIT|unix.WNOHANG, &ru)
	if err != nil {
		return Exit{}, false, fmt.Errorf("waitid: %w", err)
	}
	if e, err = decodeSigchld(info[:]); err != nil {
		return Exit{}, false, nil // WNOHANG, and it runs
	}
	e.Usage = usage(ru.Utime.Nano(), ru.Stime.Nano(), ru.Maxrss)
	return e, true, nil
}

// waitPidfd is waitid(P_PIDFD, pidfd, options, ru); see waitID.
func waitPidfd(pidfd, options int, ru *unix.Rusage) ([128]byte, error) {
	return waitID(unix.P_PIDFD, pidfd, options, ru)
}

// waitID is waitid(2), retried on EINTR, with the siginfo_t it filled (128 bytes on every
// Linux).
func waitID(idType, id, options int, ru *unix.Rusage) (info [128]byte, err error) {
	for {
		err = unix.Waitid(idType, id, (*unix.Siginfo)(unsafe.Pointer(&info)), options, ru)
		if err != unix.EINTR {
			return info, err
		}
	}
}

// close ends the watch; a wait in progress returns an error.
func (w *pidWatch) close() {
	w.closed.Store(true)
	w.f.Close()
}

// The fields of siginfo_t for SIGCHLD: si_code at offset 8; in the union, which starts after
// the padding that aligns it for pointers on 64-bit systems, si_pid then si_uid then si_status.
const (
	siCode   = 8
	siUnion  = 12 + (unsafe.Sizeof(uintptr(0)) - 4)
	siPid    = siUnion
	siStatus = siUnion + 8
)

// si_code values of SIGCHLD (<asm-generic/siginfo.h>).
const (
	cldExited = 1
	cldKilled = 2
	cldDumped = 3
)

// decodeSigchld reads the exit of a child from a siginfo_t that waitid filled.
func decodeSigchld(info []byte) (Exit, error) {
	at := func(off uintptr) int32 { return *(*int32)(unsafe.Pointer(&info[off])) }
	if at(siPid) == 0 {
		return Exit{}, errors.New("waitid: the process has not exited")
	}
	status := int(at(siStatus))
	switch at(siCode) {
	case cldExited:
		return Exit{Code: status}, nil
	case cldKilled, cldDumped:
		return Exit{Code: -1, Signal: syscall.Signal(status)}, nil
	}
	return Exit{}, fmt.Errorf("waitid: unexpected si_code %d", at(siCode))
}
