//go:build unix

package subprocess

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"github.com/subkit/subkit/subprocess/posix"
	"golang.org/x/sys/unix"
)

type posixBackend struct{}

func newBackend() backend { return posixBackend{} }

func (posixBackend) envRules() envRules    { return envRules{} }
func (posixBackend) pathRules() pathRules  { return pathRules{listSep: ":", needMode: true} }
func (posixBackend) prepare(cmd *exec.Cmd) { cmd.SysProcAttr = posix.SysProcAttr() }
func (posixBackend) attach(cmd *exec.Cmd) tree {
	return posixTree{posix.NewGroup(cmd.Process)}
}

type posixTree struct{ g *posix.Group }

func (t posixTree) signal(sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return fmt.Errorf("%w: signal %v is not a POSIX signal", ErrInvalid, sig)
	}
	return t.g.Signal(s)
}
func (t posixTree) term() error                        { return t.g.Signal(unix.SIGTERM) }
func (t posixTree) kill() error                        { return t.g.Signal(unix.SIGKILL) }
func (t posixTree) alive() bool                        { return t.g.Alive() }
func (t posixTree) waitGone(ctx context.Context) error { return t.g.WaitGone(ctx) }
func (t posixTree) exitSignal(ps *os.ProcessState) string {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return unix.SignalName(ws.Signal())
	}
	return ""
}
