//go:build unix

package subprocess

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/internal/ending"
	"github.com/subkit/subkit/internal/posix"
	"github.com/subkit/subkit/procinspect"
)

// posixBackend marks every child with two cookies: one for its tree (swept by Terminate) and
// one for the Service (swept by Close), so processes that leave their group are still found.
type posixBackend struct {
	table     posix.Table // the one reader of the process table for the Service's trees
	svcCookie *posix.Cookie
	spawner   *posix.Spawner // with Config.KillOnHostExit or Config.Guard
	guard     *guardKeeper   // with Config.Guard
}

func newBackend(cfg Config) (backend, error) {
	b := &posixBackend{}
	b.svcCookie = posix.NewCookie().ReadThrough(&b.table)
	if cfg.KillOnHostExit || cfg.Guard {
		if !posix.HasParentDeathSignal {
			return nil, &Error{Op: "new service", Name: "KillOnHostExit", Kind: ErrUnsupported,
				Err: errors.New("this OS has no parent-death signal")}
		}
		b.spawner = posix.NewSpawner()
	}
	if cfg.Guard {
		g, err := newGuardKeeper(cfg, b.spawner)
		if err != nil {
			b.spawner.Close()
			return nil, err
		}
		b.guard = g
	}
	return b, nil
}

// start starts cmd locally or through the guard, and watches its tree.
func (b *posixBackend) start(cmd *exec.Cmd) (tree, int, error) {
	t, _, pid, err := b.startTree(cmd)
	if err != nil {
		return nil, 0, err
	}
	return posixTree{t}, pid, nil
}

// startTree starts a command that prepare marked, locally or through the guard, and returns
// its tree, its cookie (the last entry prepare appended to its environment) and the leader's
// pid.
func (b *posixBackend) startTree(cmd *exec.Cmd) (*posix.Tree, *posix.Cookie, int, error) {
	c := posix.CookieFromEnv(cmd.Env[len(cmd.Env)-1]).ReadThrough(&b.table)
	if b.guard != nil {
		l, err := b.guard.spawn(cmd)
		if err != nil {
			return nil, nil, 0, err
		}
		return posix.NewTree(l.Pid(), l, c, &b.table), c, l.Pid(), nil
	}
	var err error
	if b.spawner != nil {
		err = b.spawner.Start(cmd)
	} else {
		err = cmd.Start()
	}
	if err != nil {
		return nil, nil, 0, err
	}
	pid := cmd.Process.Pid // before WatchChild takes the Process over
	return posix.NewTree(pid, posix.WatchChild(cmd), c, &b.table), c, pid, nil
}

func (b *posixBackend) setRoot(root string) error {
	if b.guard == nil {
		return nil
	}
	return b.guard.setRoot(root)
}

func (b *posixBackend) guardState() (lost, next <-chan struct{}, endAdopted func(context.Context) error) {
	if b.guard == nil {
		return nil, nil, nil
	}
	return b.guard.state()
}

func (b *posixBackend) close(ctx context.Context) error {
	var err error
	if b.guard != nil {
		err = b.guard.close(ctx)
	}
	if b.spawner != nil {
		b.spawner.Close()
	}
	return err
}

func (*posixBackend) envRules() envRules   { return envRules{} }
func (*posixBackend) pathRules() pathRules { return pathRules{listSep: ":", needMode: true} }

func (b *posixBackend) prepare(cmd *exec.Cmd) {
	cmd.SysProcAttr = posix.SysProcAttr()
	cmd.Env = append(cmd.Env, b.svcCookie.Env(), posix.NewCookie().Env())
}

// startError classifies the errno of a failed fork or exec.
func (*posixBackend) startError(err error) (kind error, hint string) {
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return nil, ""
	}
	switch errno {
	case unix.ENOEXEC:
		return ErrPermission, "the file is not a program this OS can run; add a #! line to a script"
	case unix.EMFILE, unix.ENFILE:
		return ErrLimit, "the process is out of file descriptors: close some, or raise RLIMIT_NOFILE"
	case unix.EAGAIN:
		return ErrLimit, "the user is out of processes (RLIMIT_NPROC) or the system out of pids: end some"
	case unix.ENOMEM:
		return ErrLimit, "the system is out of memory"
	case unix.E2BIG:
		return ErrLimit, "the arguments and environment are too large for exec (a single argument is limited to 128 KiB on Linux): pass large data through stdin or a file"
	}
	return nil, ""
}

// sweep ends (TERM, then KILL after grace) every process still carrying the Service's cookie.
func (b *posixBackend) sweep(ctx context.Context) error {
	return posix.SweepCookie(ctx, b.svcCookie, ending.Policy{Grace: DefaultGrace})
}

type posixTree struct{ t *posix.Tree }

func (t posixTree) signal(sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return fmt.Errorf("%w: signal %v is not a POSIX signal", ErrInvalid, sig)
	}
	if !validSignal(s) {
		return fmt.Errorf("%w: %d is not a signal number of this OS", ErrInvalid, int(s))
	}
	return t.t.Signal(s)
}

// validSignal reports whether s is 0 (the existence probe) or a signal this OS has: a named
// one, or on Linux a real-time signal (32 to 64).
func validSignal(s syscall.Signal) bool {
	return s == 0 || s > 0 && (unix.SignalName(s) != "" || runtime.GOOS == "linux" && s >= 32 && s <= 64)
}

func (t posixTree) term(sweep bool) error { return t.both(unix.SIGTERM, sweep) }
func (t posixTree) kill(sweep bool) error { return t.both(unix.SIGKILL, sweep) }

// both signals the group, then, with sweep, the processes that left it with the tree's
// cookie. A stopped process cannot act on SIGTERM, so it is continued too.
func (t posixTree) both(sig syscall.Signal, sweep bool) error {
	err := t.t.Signal(sig)
	if sig == unix.SIGTERM {
		t.t.Signal(unix.SIGCONT)
	}
	if !sweep {
		return err
	}
	if serr := t.t.Sweep(context.Background(), sig); serr != nil && err == nil {
		err = serr
	}
	return err
}

func (t posixTree) rediscover(ctx context.Context) (ending.Target, error) {
	return t.t.Rediscover(ctx)
}

func (t posixTree) exited() <-chan struct{} { return t.t.Exited() }

func (t posixTree) exit() exitInfo {
	e, err := t.t.Exit()
	x := exitInfo{code: e.Code, err: err,
		usage: Usage{User: e.Usage.User, System: e.Usage.System, MaxRSS: e.Usage.MaxRSS}}
	if e.Signal != 0 {
		x.signal = unix.SignalName(e.Signal)
	}
	return x
}

func (t posixTree) alive() bool { return t.t.Alive() }

// waitGone also reports a failure to reap the leader once the tree is gone (something else in
// the host process reaped it first).
func (t posixTree) waitGone(ctx context.Context) error {
	if err := t.t.WaitGone(ctx); err != nil {
		return err
	}
	return t.t.ReapErr()
}

func (t posixTree) members(ctx context.Context) ([]procinspect.Proc, error) {
	return t.t.Members(ctx)
}
