//go:build windows

package subprocess

import (
	"context"
	"errors"
	"os"
	"os/exec"
)

// windowsBackend is, until the job-object backend lands in subprocess/windows, the direct
// child only: Terminate kills the leader, and the tree is the leader.
type windowsBackend struct{}

func newBackend() backend { return windowsBackend{} }

func (windowsBackend) envRules() envRules { return envRules{foldCase: true} }
func (windowsBackend) pathRules() pathRules {
	return pathRules{listSep: ";", exts: parsePathExt("")}
}
func (windowsBackend) prepare(cmd *exec.Cmd)     {}
func (windowsBackend) attach(cmd *exec.Cmd) tree { return leaderTree{cmd.Process} }

type leaderTree struct{ p *os.Process }

func (t leaderTree) signal(sig os.Signal) error {
	if sig != os.Kill {
		return errors.New("only os.Kill can be sent on Windows")
	}
	return t.kill()
}
func (t leaderTree) term() error { return nil } // no graceful stop without a console
func (t leaderTree) kill() error {
	if err := t.p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}
func (leaderTree) alive() bool                        { return false } // the leader is the tree
func (leaderTree) waitGone(context.Context) error     { return nil }
func (leaderTree) exitSignal(*os.ProcessState) string { return "" }
