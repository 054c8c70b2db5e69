package posix

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"
)

// pidWatch learns that one process has exited from a kqueue (EVFILT_PROC, NOTE_EXIT) in the
// runtime poller, so a goroutine waiting on it holds no OS thread. For a child, the kernel
// also hands over the wait status (NOTE_EXITSTATUS), which leaves the child unreaped.
type pidWatch struct {
	f      *os.File
	closed atomic.Bool
	gone   bool // the process had exited before the watch was registered
	status syscall.WaitStatus
	got    bool // status holds the child's wait status
}

// openPidWatch opens a watch on pid; child says whether pid is an unreaped child of this
// process, whose exit status the watch can then report.
func openPidWatch(pid int, child bool) (*pidWatch, error) {
	kq, err := unix.Kqueue()
	if err != nil {
		return nil, fmt.Errorf("kqueue: %w", err)
	}
	unix.CloseOnExec(kq)
	if err := unix.SetNonblock(kq, true); err != nil {
		unix.Close(kq)
		return nil, fmt.Errorf("kqueue non-blocking: %w", err)
	}
	var ev unix.Kevent_t
	unix.SetKevent(&ev, pid, unix.EVFILT_PROC, unix.EV_ADD|unix.EV_ONESHOT)
	ev.Fflags = unix.NOTE_EXIT
	if child {
		ev.Fflags |= unix.NOTE_EXITSTATUS
	}
	w := &pidWatch{}
	if _, err := unix.Kevent(kq, []unix.Kevent_t{ev}, nil, nil); errors.Is(err, unix.ESRCH) {
		w.gone = true
	} else if err != nil {
		unix.Close(kq)
		return nil, fmt.Errorf("kevent EVFILT_PROC %d: %w", pid, err)
	}
	w.f = os.NewFile(uintptr(kq), "kqueue")
	return w, nil
}

// watchChild watches a child started by os/exec: here the Process stays as it is and reaps
// the child (owned is false).
func watchChild(p *os.Process) (w *pidWatch, owned bool, err error) {
	w, err = openPidWatch(p.Pid, true)
	return w, false, err
}

// reap is never needed here: see watchChild.
func (w *pidWatch) reap() error {
	w.close()
	return errors.New("the watch does not reap on this OS")
}

// wait returns once the process has exited, or with an error when the watch was closed.
func (w *pidWatch) wait() error {
	if w.gone {
		return nil
	}
	rc, err := w.f.SyscallConn()
	if err != nil {
		return err
	}
	var evs [1]unix.Kevent_t
	var kerr error
	exited := func(fd uintptr) bool {
		for {
			n, err := unix.Kevent(int(fd), nil, evs[:], &unix.Timespec{})
			if err == unix.EINTR {
				continue
			}
			if n > 0 {
				if evs[0].Fflags&unix.NOTE_EXITSTATUS != 0 {
					w.status, w.got = syscall.WaitStatus(evs[0].Data), true
				}
				return true
			}
			kerr = err
			return err != nil
		}
	}
	if err := rc.Read(exited); err != nil && !w.closed.Load() {
		// Not in the poller: wait in kevent itself, holding a thread while it waits.
		err = rc.Control(func(fd uintptr) {
			for {
				n, err := unix.Kevent(int(fd), nil, evs[:], nil)
				if n > 0 && evs[0].Fflags&unix.NOTE_EXITSTATUS != 0 {
					w.status, w.got = syscall.WaitStatus(evs[0].Data), true
				}
				if err != unix.EINTR {
					kerr = err
					return
				}
			}
		})
		return errors.Join(err, kerr)
	} else if err != nil {
		return err
	}
	return kerr
}

// exit reports how a child ended, from the status the kernel handed over with the exit
// event; the child stays unreaped.
func (w *pidWatch) exit() (Exit, error) {
	if !w.got {
		return Exit{}, errors.New("the exit status was not reported (the process had exited before it was watched)")
	}
	if w.status.Signaled() {
		return Exit{Code: -1, Signal: w.status.Signal()}, nil
	}
	return Exit{Code: w.status.ExitStatus()}, nil
}

// close ends the watch; a wait in progress returns an error.
func (w *pidWatch) close() {
	w.closed.Store(true)
	if w.f != nil {
		w.f.Close()
	}
}
