//go:build windows

package subprocess

import (
	"context"
	"fmt"
	"os"
	"os/exec"

	winproc "github.com/subkit/subkit/subprocess/windows"
)

// windowsBackend puts every tree in a job object of its own (subprocess/windows): the leader
// starts suspended, joins its job, and is resumed. Where Windows refuses the job, the tree is
// ended with taskkill /T /F behind a pid + creation-time fence. Terminal support is absent.
type windowsBackend struct{}

// newBackend ignores Config.KillOnHostExit: job objects already end every tree when the host
// exits (KILL_ON_JOB_CLOSE).
func newBackend(Config) (backend, error) { return windowsBackend{}, nil }

func (windowsBackend) start(cmd *exec.Cmd) error { return cmd.Start() }
func (windowsBackend) close()                    {}

func (windowsBackend) envRules() envRules { return envRules{foldCase: true} }
func (windowsBackend) pathRules() pathRules {
	return pathRules{listSep: ";", exts: parsePathExt("")}
}
func (windowsBackend) prepare(cmd *exec.Cmd) { cmd.SysProcAttr = winproc.SysProcAttr() }
func (windowsBackend) attach(cmd *exec.Cmd) (tree, error) {
	// A refused job puts the tree on the taskkill route; a leader that could not be resumed
	// has been ended, and the spawn fails.
	t := winproc.Attach(cmd.Process, winproc.Config{})
	if err := t.StartErr(); err != nil {
		return nil, err
	}
	return windowsTree{t}, nil
}

type windowsTree struct{ t *winproc.Tree }

// signal maps the two signals Windows can express: os.Kill ends the tree, os.Interrupt sends
// CTRL_BREAK_EVENT to its console process group.
func (t windowsTree) signal(sig os.Signal) error {
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
func (t windowsTree) term() error                        { return t.t.Term() }
func (t windowsTree) kill() error                        { return t.t.Kill() }
func (t windowsTree) alive() bool                        { return t.t.Alive() }
func (t windowsTree) waitGone(ctx context.Context) error { return t.t.WaitGone(ctx) }
func (windowsTree) exitSignal(*os.ProcessState) string   { return "" }
