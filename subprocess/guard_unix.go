//go:build unix

package subprocess

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"

	"github.com/subkit/subkit/internal/ending"
	"github.com/subkit/subkit/internal/guard"
	"github.com/subkit/subkit/internal/posix"
)

// guardKeeper runs the Service's guard, and a new one when it has died.
type guardKeeper struct {
	path    string
	env     []string
	spawner *posix.Spawner

	mu     sync.Mutex
	root   string // the runtime root, given to each guard
	client *guard.Client
	fresh  chan struct{} // closed when a newer guard than client starts
}

func newGuardKeeper(cfg Config, spawner *posix.Spawner) (*guardKeeper, error) {
	path, err := helperPath(cfg.Helper, "Config.Guard")
	if err != nil {
		return nil, err
	}
	g := &guardKeeper{path: path, env: os.Environ(), spawner: spawner, fresh: make(chan struct{})}
	if _, err := g.current(); err != nil {
		return nil, err
	}
	return g, nil
}

// current is the running guard, started anew when the last one has died.
func (g *guardKeeper) current() (*guard.Client, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.client != nil && g.client.Err() == nil {
		return g.client, nil
	}
	c, err := guard.Start(g.path, g.env, DefaultGrace, g.spawner.Start)
	if errors.Is(err, errors.ErrUnsupported) {
		return nil, &Error{Op: "start guard", Kind: ErrUnsupported, Err: err}
	}
	if err != nil {
		return nil, &Error{Op: "start guard", Name: g.path, Kind: ErrSystem, Err: err,
			Hint: "the helper binary must call subprocess.HelperMain at the top of main"}
	}
	if g.root != "" {
		if err := c.SetRoot(g.root); err != nil {
			c.Close(context.Background())
			return nil, &Error{Op: "start guard", Name: g.path, Kind: ErrSystem, Err: err}
		}
	}
	if g.client != nil {
		close(g.fresh)
		g.fresh = make(chan struct{})
	}
	g.client = c
	return c, nil
}

// setRoot has the guard remove root when the host is gone.
func (g *guardKeeper) setRoot(root string) error {
	g.mu.Lock()
	g.root = root
	c := g.client
	g.mu.Unlock()
	if c == nil {
		return nil
	}
	return c.SetRoot(root)
}

// state returns a channel closed when the guard running now dies, one closed when a newer
// guard starts, and what ends, once that guard is dead, the processes it had adopted: by the
// identities it announced, for nothing else would end them (all nil once the keeper is closed).
func (g *guardKeeper) state() (lost, next <-chan struct{}, endAdopted func(context.Context) error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.client
	if c == nil {
		return nil, nil, nil
	}
	return c.Done(), g.fresh, func(ctx context.Context) error {
		return ending.Policy{Grace: DefaultGrace}.End(ctx, posix.NewProcs(c.Adopted()))
	}
}

// spawn has the guard start cmd (prepared, not started).
func (g *guardKeeper) spawn(cmd *exec.Cmd) (*guard.Leader, error) {
	c, err := g.current()
	if err != nil {
		return nil, err
	}
	r := guard.Request{Path: cmd.Path, Args: cmd.Args, Dir: cmd.Dir, Env: cmd.Env}
	if a := cmd.SysProcAttr; a != nil {
		r.Setsid, r.Setctty = a.Setsid, a.Setsid && a.Setctty
		r.Clone = cloneflags(a)
	}
	var opened []*os.File
	defer func() {
		for _, f := range opened {
			f.Close()
		}
	}()
	for i, s := range []any{cmd.Stdin, cmd.Stdout, cmd.Stderr} {
		switch f := s.(type) {
		case *os.File:
			r.Stdio[i] = f
		case nil:
			null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
			if err != nil {
				return nil, err
			}
			opened = append(opened, null)
			r.Stdio[i] = null
		default:
			return nil, fmt.Errorf("%w: a guarded spawn takes files for stdio, not %T", ErrInvalid, s)
		}
	}
	l, err := c.Spawn(context.Background(), r)
	if errors.Is(err, guard.ErrGone) {
		return nil, &Error{Op: "spawn", Name: cmd.Path, Kind: ErrSystem, Err: err,
			Hint: "the Service's guard died; the next Spawn starts a new one"}
	}
	return l, err
}

// close has the guard end what is left and exit.
func (g *guardKeeper) close(ctx context.Context) error {
	g.mu.Lock()
	c := g.client
	g.client = nil
	g.mu.Unlock()
	if c == nil {
		return nil
	}
	if err := c.Close(ctx); err != nil {
		return &Error{Op: "close guard", Err: err}
	}
	return nil
}
