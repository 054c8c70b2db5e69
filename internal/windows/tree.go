package windows

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/subkit/subkit/internal/backoff"
	"github.com/subkit/subkit/procinspect"
)

// Route is how a tree is ended and watched.
type Route int

const (
	// RouteJob: the tree is in a job object of its own. Kill is TerminateJobObject, liveness
	// is the job's count of active processes, and the tree dies with the host.
	RouteJob Route = iota + 1
	// RouteTaskkill: the job route was refused. Kill is `taskkill /PID <pid> /T /F` behind the
	// identity fence, and liveness is the direct child only.
	RouteTaskkill
)

// String is the route's name: "job" or "taskkill".
func (r Route) String() string {
	switch r {
	case RouteJob:
		return "job"
	case RouteTaskkill:
		return "taskkill"
	}
	return "Route(" + strconv.Itoa(int(r)) + ")"
}

// Identity names one process exactly: its pid and its creation FILETIME as the Start token.
// Two processes are the same only if both match.
type Identity = procinspect.Identity

// KillExitCode is the exit code TerminateJobObject gives the processes it ends, the one
// `taskkill /F` gives too.
const KillExitCode = 1

// DefaultTaskkillTimeout bounds one taskkill run when Config.TaskkillTimeout is zero.
const DefaultTaskkillTimeout = 10 * time.Second

// Config configures Attach. The zero value uses the real OS calls.
type Config struct {
	// Sys makes the OS calls; nil means NativeSys().
	Sys Sys
	// Runner runs taskkill on the taskkill route; nil means DefaultRunner().
	Runner Runner
	// TaskkillTimeout bounds one taskkill run; 0 means DefaultTaskkillTimeout.
	TaskkillTimeout time.Duration
}

// Tree is one spawned process tree. All methods are safe for concurrent use.
//
// Once a liveness probe has seen the job empty, the Tree releases the job and never acts on
// the tree again. A tree not seen empty keeps its job handle until the host exits, at which
// point KILL_ON_JOB_CLOSE ends it.
type Tree struct {
	leader   Leader
	sys      Sys
	runner   Runner
	timeout  time.Duration
	id       Identity
	idErr    error // why id.Start is unknown
	route    Route
	jobErr   error // why the job route is not used
	startErr error // attach failed and the leader was ended

	mu   sync.Mutex
	job  Job // nil on the taskkill route and once the tree was seen gone
	gone bool
}

// Attach takes over a leader started with SysProcAttr (suspended, in a new process group):
// it records the leader's identity, puts it in a job object of its own when Windows allows,
// and resumes it. It never fails: when the leader cannot be resumed it is ended, and StartErr
// says why; when the job route is refused, the tree takes the taskkill route, and JobErr says
// why.
func Attach(p *os.Process, cfg Config) *Tree {
	if p == nil {
		return attach(noLeader{}, 0, cfg)
	}
	return attach(p, p.Pid, cfg)
}

// noLeader stands for a missing process: it has no handle and nothing to kill.
type noLeader struct{}

func (noLeader) WithHandle(func(uintptr)) error {
	return fmt.Errorf("%w: no process given", ErrNoProcess)
}
func (noLeader) Kill() error { return nil }

func attach(l Leader, pid int, cfg Config) *Tree {
	t := &Tree{leader: l, sys: cfg.Sys, runner: cfg.Runner, timeout: cfg.TaskkillTimeout,
		id: Identity{Pid: pid}, route: RouteTaskkill}
	if t.sys == nil {
		t.sys = NativeSys()
	}
	if t.runner == nil {
		t.runner = DefaultRunner()
	}
	if t.timeout <= 0 {
		t.timeout = DefaultTaskkillTimeout
	}
	killLeader := false
	herr := l.WithHandle(func(h uintptr) {
		if start, err := t.sys.ProcessStart(h); err != nil {
			t.idErr = err
		} else {
			t.id.Start = start
		}
		job, err := t.sys.CreateJob()
		if err != nil {
			err = fmt.Errorf("create job: %w", err)
		} else if err = job.Assign(h); err != nil {
			job.Close() // empty: closing it kills nothing
			err = fmt.Errorf("assign the leader to its job: %w", err)
		}
		if err != nil {
			t.jobErr = fmt.Errorf("%w: %w", ErrJobRefused, err)
		} else {
			t.job, t.route = job, RouteJob
		}
		if err := t.sys.Resume(h); err != nil {
			// Left suspended, the leader would never run nor exit: end it. The caller drops a
			// tree that failed to start, so its job is released here (with KILL_ON_JOB_CLOSE,
			// closing it ends whatever Terminate missed).
			t.startErr = &Error{Op: "resume", Route: t.route, Pid: pid,
				Err: fmt.Errorf("the leader was started suspended and could not be resumed, so it was ended: %w", err)}
			killLeader = true
			if t.job != nil {
				killLeader = t.job.Terminate(KillExitCode) != nil
				if cerr := t.job.Close(); cerr != nil {
					t.startErr = errors.Join(t.startErr, &Error{Op: "resume", Route: t.route, Pid: pid,
						Err: fmt.Errorf("close the job: %w", cerr)})
				}
				t.job = nil
			}
		}
	})
	if herr != nil {
		t.idErr = herr
		t.startErr = &Error{Op: "attach", Route: t.route, Pid: pid,
			Err: fmt.Errorf("no handle to the suspended leader, so it cannot be resumed and was ended: %w", herr)}
		killLeader = true
	}
	if killLeader {
		if err := l.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.startErr = errors.Join(t.startErr, &Error{Op: "attach", Route: t.route, Pid: pid,
				Err: fmt.Errorf("end the leader: %w", err)})
		}
	}
	return t
}

// Route is the route the tree took at Attach.
func (t *Tree) Route() Route { return t.route }

// JobErr says why the tree is on the taskkill route (wrapping ErrJobRefused), or is nil.
func (t *Tree) JobErr() error { return t.jobErr }

// StartErr says why Attach had to end the leader (it could not be resumed), or is nil.
func (t *Tree) StartErr() error { return t.startErr }

// Identity is the leader's pid and creation time as recorded at Attach (Start is 0 when it
// could not be read; the taskkill route then refuses to kill by pid).
func (t *Tree) Identity() Identity { return t.id }

// Alive reports whether the job still has a process that has not exited. On the taskkill
// route it is always false: only the direct child is tracked, and the caller waits for that
// one itself. Once it has reported false it never reports true again. A failed probe counts
// as alive (see WaitGone for the error).
func (t *Tree) Alive() bool {
	alive, _ := t.probe()
	return alive
}

func (t *Tree) probe() (bool, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.gone || t.job == nil {
		return false, nil
	}
	n, err := t.job.ActiveProcesses()
	if err != nil {
		return true, &Error{Op: "probe", Route: RouteJob, Pid: t.id.Pid, Err: fmt.Errorf("count the job's active processes: %w", err)}
	}
	if n > 0 {
		return true, nil
	}
	// Nothing in the job can start a process any more: the job stays empty. Releasing it
	// kills nothing.
	t.gone = true
	t.job.Close()
	t.job = nil
	return false, nil
}

// WaitGone returns nil once Alive would report false, ctx's error first, or the error of a
// liveness probe that failed. It probes with internal/backoff's back-off.
func (t *Tree) WaitGone(ctx context.Context) error {
	return backoff.Until(ctx, backoff.Policy{}, func() (bool, error) {
		alive, err := t.probe()
		return !alive, err
	})
}

func (t *Tree) isGone() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.gone
}

// Kill ends the tree. On the job route it terminates the job; should that fail, it falls back
// to the taskkill route and reports both. On the taskkill route it runs taskkill behind the
// identity fence. A tree already gone is not an error; every other outcome is returned as an
// *Error, never thrown.
func (t *Tree) Kill() error {
	t.mu.Lock()
	if t.gone {
		t.mu.Unlock()
		return nil
	}
	var jobErr error
	if t.job != nil {
		if jobErr = t.job.Terminate(KillExitCode); jobErr == nil {
			t.mu.Unlock()
			return nil
		}
	}
	t.mu.Unlock()
	tkErr := t.taskkill()
	if jobErr == nil {
		return tkErr
	}
	fallback := errors.New("the taskkill fallback ended the leader's tree; descendants whose parent had exited may survive")
	if tkErr != nil {
		fallback = fmt.Errorf("the taskkill fallback failed too: %w", tkErr)
	}
	return &Error{Op: "kill", Route: RouteJob, Pid: t.id.Pid,
		Err: errors.Join(fmt.Errorf("terminate job: %w", jobErr), fallback)}
}

// Term is the graceful stop request: Interrupt, with its failure dropped, so that a caller's
// grace-then-Kill ladder simply goes on to Kill where no console event can be sent.
func (t *Tree) Term() error {
	t.Interrupt()
	return nil
}

// Interrupt sends CTRL_BREAK_EVENT to the leader's process group, which console programs
// sharing this process's console receive. It is sent only while the leader runs (so the group
// id is a live leader's pid) and never to group 0. A tree already gone is not an error.
func (t *Tree) Interrupt() error {
	if t.isGone() {
		return nil
	}
	e := &Error{Op: "interrupt", Route: t.route, Pid: t.id.Pid}
	if t.id.Pid <= 0 {
		e.Err = fmt.Errorf("%w: pid %d is no process group", ErrNoProcess, t.id.Pid)
		return e
	}
	var err error
	herr := t.leader.WithHandle(func(h uintptr) {
		exited, xerr := t.sys.Exited(h)
		switch {
		case xerr != nil:
			err = fmt.Errorf("check the leader is running: %w", xerr)
		case exited:
			err = fmt.Errorf("%w: the leader has exited; its process group cannot be addressed safely", ErrNoProcess)
		default:
			if cerr := t.sys.CtrlBreak(t.id.Pid); cerr != nil {
				err = fmt.Errorf("send CTRL_BREAK_EVENT to process group %d (possible only when this process has a console the tree shares): %w", t.id.Pid, cerr)
			}
		}
	})
	if herr != nil {
		err = fmt.Errorf("%w: the leader has been waited for; its process group cannot be addressed safely: %w", ErrNoProcess, herr)
	}
	if err == nil {
		return nil
	}
	e.Err = err
	return e
}
