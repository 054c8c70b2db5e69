//go:build windows

package subprocess

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/windows"

	"github.com/subkit/subkit/internal/ending"
	winproc "github.com/subkit/subkit/internal/windows"
	"github.com/subkit/subkit/procinspect"
)

// windowsBackend puts every tree in a job object of its own (internal/windows): the leader
// starts suspended, joins its job, and is resumed. Where Windows refuses the job, the tree is
// ended with taskkill /T /F behind a pid + creation-time fence. Terminal support is absent.
// The leader is waited for as os/exec does (WaitForSingleObject on a thread of its own); the
// process handle that os.Process holds until then keeps its pid from being reused.
type windowsBackend struct{}

// newBackend ignores Config.KillOnHostExit: job objects already end every tree when the host
// exits (KILL_ON_JOB_CLOSE).
func newBackend(cfg Config) (backend, error) {
	if cfg.Guard {
		return nil, &Error{Op: "new service", Name: "Guard", Kind: ErrUnsupported,
			Err: errors.New("Windows needs no guard: every tree is in a job object that ends with the host")}
	}
	return windowsBackend{}, nil
}

func (windowsBackend) close(context.Context) error { return nil }
func (windowsBackend) guardState() (lost, next <-chan struct{}, endAdopted func(context.Context) error) {
	return nil, nil, nil
}
func (windowsBackend) sweep(ctx context.Context) error { return nil }

func (windowsBackend) envRules() envRules { return envRules{foldCase: true} }
func (windowsBackend) pathRules() pathRules {
	return pathRules{listSep: ";", exts: parsePathExt("")}
}
func (windowsBackend) prepare(cmd *exec.Cmd) { cmd.SysProcAttr = winproc.SysProcAttr() }

func (windowsBackend) startError(err error) (kind error, hint string) {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return nil, ""
	}
	switch errno {
	case windows.ERROR_BAD_EXE_FORMAT:
		return ErrPermission, "the file is not a program Windows can run"
	case windows.ERROR_NOT_ENOUGH_MEMORY, windows.ERROR_NO_SYSTEM_RESOURCES, windows.ERROR_TOO_MANY_OPEN_FILES:
		return ErrLimit, "the system is out of memory or handles"
	case windows.ERROR_FILENAME_EXCED_RANGE:
		return ErrLimit, "the command line is too long (32,767 characters at most): pass large data through stdin or a file"
	}
	return nil, ""
}

func (windowsBackend) start(cmd *exec.Cmd) (tree, int, error) {
	if err := cmd.Start(); err != nil {
		return nil, 0, err
	}
	// A refused job puts the tree on the taskkill route; a leader that could not be resumed
	// has been ended, and the spawn fails.
	t := winproc.Attach(cmd.Process, winproc.Config{})
	if err := t.StartErr(); err != nil {
		cmd.Wait()
		return nil, 0, err
	}
	w := &windowsTree{t: t, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		err := cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			err = nil
		}
		w.info = exitInfo{code: -1, err: err}
		if err == nil && cmd.ProcessState != nil {
			w.info.code = cmd.ProcessState.ExitCode()
		}
	}()
	return w, cmd.Process.Pid, nil
}

type windowsTree struct {
	t    *winproc.Tree
	done chan struct{}
	info exitInfo
}

// signal maps the two signals Windows can express: os.Kill ends the tree, os.Interrupt sends
// CTRL_BREAK_EVENT to its console process group.
func (t *windowsTree) signal(sig os.Signal) error {
	switch sig {
	case os.Kill:
		return t.t.Kill()
	case os.Interrupt:
		return t.t.Interrupt()
	}
	return fmt.Errorf("%w: signal %v cannot be sent on Windows (only os.Kill, and os.Interrupt as CTRL_BREAK_EVENT)", ErrInvalid, sig)
}

// term sends CTRL_BREAK_EVENT where it can and is otherwise a no-op: Windows has no SIGTERM,
// so Terminate's ladder goes on to kill after the grace.
func (t *windowsTree) term(bool) error                                   { return t.t.Term() }
func (t *windowsTree) kill(bool) error                                   { return t.t.Kill() }
func (t *windowsTree) rediscover(context.Context) (ending.Target, error) { return nil, nil }
func (t *windowsTree) exited() <-chan struct{}                           { return t.done }
func (t *windowsTree) exit() exitInfo                                    { <-t.done; return t.info }
func (t *windowsTree) alive() bool                                       { return t.t.Alive() }
func (t *windowsTree) waitGone(ctx context.Context) error                { return t.t.WaitGone(ctx) }
func (t *windowsTree) members(context.Context) ([]procinspect.Proc, error) {
	return nil, &Error{Op: "members", Kind: ErrUnsupported, Err: errors.New("the members of a job object are not listed on Windows")}
}

func (windowsBackend) setRoot(string) error { return nil }
