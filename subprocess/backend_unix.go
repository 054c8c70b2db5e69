//go:build unix

package subprocess

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/procinspect"
	"github.com/subkit/subkit/subprocess/posix"
)

// posixBackend marks every child with two cookies: one for its tree (swept by Terminate) and
// one for the Service (swept by Close), so processes that leave their group are still found.
type posixBackend struct {
	svcCookie *posix.Cookie
	spawner   *posix.Spawner // with Config.KillOnHostExit
}

func newBackend(cfg Config) (backend, error) {
	b := &posixBackend{svcCookie: posix.NewCookie()}
	if cfg.KillOnHostExit {
		if !posix.HasParentDeathSignal {
			return nil, &Error{Op: "new service", Name: "KillOnHostExit", Kind: ErrUnsupported,
				Err: errors.New("this OS has no parent-death signal")}
		}
		b.spawner = posix.NewSpawner()
	}
	return b, nil
}

func (b *posixBackend) start(cmd *exec.Cmd) error {
	if b.spawner != nil {
		return b.spawner.Start(cmd)
	}
	return cmd.Start()
}

func (b *posixBackend) close() {
	if b.spawner != nil {
		b.spawner.Close()
	}
}

func (*posixBackend) envRules() envRules   { return envRules{} }
func (*posixBackend) pathRules() pathRules { return pathRules{listSep: ":", needMode: true} }

func (b *posixBackend) prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = posix.SysProcAttr()
	cmd.Env = append(cmd.Env, b.svcCookie.Env(), posix.NewCookie().Env())
}

func (b *posixBackend) attach(cmd *exec.Cmd) (tree, error) {
	// The tree's cookie is the last entry prepare appended.
	c := posix.CookieFromEnv(cmd.Env[len(cmd.Env)-1])
	return posixTree{posix.NewTree(cmd.Process, c)}, nil
}

// sweep ends (TERM, then KILL after grace) every process still carrying the Service's cookie.
func (b *posixBackend) sweep(ctx context.Context) error {
	return posix.SweepCookie(ctx, b.svcCookie, DefaultGrace)
}

type posixTree struct{ t *posix.Tree }

func (t posixTree) signal(sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return fmt.Errorf("%w: signal %v is not a POSIX signal", ErrInvalid, sig)
	}
	return t.t.Signal(s)
}

func (t posixTree) term() error { return t.both(unix.SIGTERM) }
func (t posixTree) kill() error { return t.both(unix.SIGKILL) }

// both signals the group, then the processes that left it with the tree's cookie. A stopped
// process cannot act on SIGTERM, so it is continued too.
func (t posixTree) both(sig syscall.Signal) error {
	err := t.t.Signal(sig)
	if sig == unix.SIGTERM {
		t.t.Signal(unix.SIGCONT)
	}
	if serr := t.t.Sweep(context.Background(), sig); serr != nil && err == nil {
		err = serr
	}
	return err
}

func (t posixTree) finish(ctx context.Context, grace time.Duration) error {
	return t.t.Finish(ctx, grace)
}

func (t posixTree) alive() bool                        { return t.t.Alive() }
func (t posixTree) waitGone(ctx context.Context) error { return t.t.WaitGone(ctx) }
func (t posixTree) exitSignal(ps *os.ProcessState) string {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return unix.SignalName(ws.Signal())
	}
	return ""
}

func (t posixTree) members(ctx context.Context) ([]procinspect.Proc, error) {
	return t.t.Members(ctx)
}
