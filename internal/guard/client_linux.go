package guard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/subkit/subkit/internal/posix"
	"github.com/subkit/subkit/procinspect"
)

// RoleVar names the environment variable that makes a helper binary act as a guard (see
// subprocess.HelperMain); its value is RoleGuard.
const (
	RoleVar   = "SUBKIT_HELPER"
	RoleGuard = "guard"
)

// ErrGone is wrapped by the errors of a Client whose guard has exited.
var ErrGone = errors.New("the guard process is gone")

// Client is the host's end of a guard. It is safe for concurrent use.
type Client struct {
	conn    *net.UnixConn
	wmu     sync.Mutex    // serialises writes, and guards lastEnv
	lastEnv []string      // the environment of the last spawn sent: the guard keeps it too
	done    chan struct{} // closed once the guard process has exited
	err     error         // how it exited, set before done is closed

	mu      sync.Mutex
	nextID  uint64
	pending map[uint64]chan answer
	leaders map[int]*Leader
	adopted map[int]procinspect.Identity // as the guard announced them, until it reaped them
}

// Start starts a guard: the helper binary at path, with env (to which the role and the host's
// pid are added), through start (which starts a prepared command, on the Service's spawning
// thread; the guard gets SIGTERM as its parent-death signal), giving the trees grace between
// SIGTERM and SIGKILL when the host is gone.
func Start(path string, env []string, grace time.Duration, start func(*exec.Cmd) error) (*Client, error) {
	hostEnd, guardEnd, err := socketPair()
	if err != nil {
		return nil, err
	}
	defer guardEnd.Close()
	cmd := &exec.Cmd{
		Path: path, Args: []string{path},
		Env:        append(env, RoleVar+"="+RoleGuard, HostVar+"="+strconv.Itoa(os.Getpid())),
		ExtraFiles: []*os.File{guardEnd}, // fd 3
		Stderr:     os.Stderr,            // where a guard that fails says why
		// A group of its own, so that a terminal's signals to the host's group miss it.
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM},
	}
	if err := start(cmd); err != nil {
		hostEnd.Close()
		return nil, fmt.Errorf("guard: start %s: %w", path, err)
	}
	c, err := conn(hostEnd)
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, err
	}
	cl := &Client{conn: c, done: make(chan struct{}), pending: map[uint64]chan answer{}, leaders: map[int]*Leader{},
		adopted: map[int]procinspect.Identity{}}
	go func() {
		err := cmd.Wait() // one thread per Service, for the guard itself
		cl.err = fmt.Errorf("%w: %v", ErrGone, err)
		if err == nil {
			cl.err = ErrGone
		}
		close(cl.done)
		c.Close()
	}()
	go cl.read()
	if err := cl.send(&message{Op: opHello, Grace: int64(grace)}, nil); err != nil {
		cl.Close(context.Background())
		return nil, err
	}
	return cl, nil
}

// Done is closed once the guard process has exited; Err then says how.
func (c *Client) Done() <-chan struct{} { return c.done }

// Adopted lists the processes the guard said it adopted (re-parented to it when they left
// their trees) and had not reaped yet. Once the guard is gone nothing ends them: the host
// must, by these identities.
func (c *Client) Adopted() []procinspect.Identity {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]procinspect.Identity, 0, len(c.adopted))
	for _, id := range c.adopted {
		ids = append(ids, id)
	}
	return ids
}

// Err is why the guard is gone, or nil while it runs.
func (c *Client) Err() error {
	select {
	case <-c.done:
		return c.err
	default:
		return nil
	}
}

// send sends m. A spawn's environment is sent as what differs from the last one's: the
// Service's environment is the same for every tree but for the cookies at its end.
func (c *Client) send(m *message, files []*os.File) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	env := m.Env
	if m.Op == opSpawn {
		for m.EnvKeep < min(len(env), len(c.lastEnv)) && env[m.EnvKeep] == c.lastEnv[m.EnvKeep] {
			m.EnvKeep++
		}
		m.Env = env[m.EnvKeep:]
	}
	if err := send(c.conn, m, files); err != nil {
		if gone := c.Err(); gone != nil {
			return gone
		}
		return fmt.Errorf("guard: send: %w", err)
	}
	if m.Op == opSpawn {
		c.lastEnv = env
	}
	return nil
}

// read dispatches the guard's answers until the socket fails.
func (c *Client) read() {
	defer func() {
		<-c.done
		c.mu.Lock()
		for _, ch := range c.pending {
			close(ch)
		}
		c.pending = nil
		for _, l := range c.leaders {
			l.gone(c.err)
		}
		c.leaders = nil
		c.mu.Unlock()
	}()
	for {
		m, files, err := recv(c.conn)
		closeAll(files)
		if err != nil {
			return
		}
		c.mu.Lock()
		switch m.Op {
		case opStarted:
			a := answer{m: m}
			if m.Pid > 0 {
				a.l = &Leader{c: c, pid: m.Pid, exited: make(chan struct{}),
					id: procinspect.Identity{Pid: m.Pid, Start: m.Start}}
				c.leaders[m.Pid] = a.l // before any exit message about it
			}
			if ch, ok := c.pending[m.ID]; ok {
				ch <- a
				delete(c.pending, m.ID)
			}
		case opExit:
			if l, ok := c.leaders[m.Pid]; ok {
				l.e = posix.Exit{Code: m.Code, Signal: syscall.Signal(m.Signal), Usage: posix.Usage{
					User: time.Duration(m.User), System: time.Duration(m.System), MaxRSS: m.MaxRSS}}
				close(l.exited)
				delete(c.leaders, m.Pid)
			}
		case opAdopted:
			c.adopted[m.Pid] = procinspect.Identity{Pid: m.Pid, Start: m.Start}
		case opLeft:
			delete(c.adopted, m.Pid)
		}
		c.mu.Unlock()
	}
}

// answer is the guard's answer to a spawn: the message, and the leader it started.
type answer struct {
	m *message
	l *Leader
}

// Request is one tree for the guard to start.
type Request struct {
	Path, Dir string
	Args, Env []string
	Stdio     [3]*os.File // stdin, stdout, stderr
	Setsid    bool        // a session of its own instead of a process group
	Setctty   bool        // with Setsid: stdin becomes its controlling terminal
	Clone     uintptr     // namespaces to start in, as sandbox.SetNamespaces sets them
}

// Spawn has the guard start r and returns the leader, whose pid is the tree's group (or
// session). An exec failure wraps the syscall.Errno the guard met.
func (c *Client) Spawn(ctx context.Context, r Request) (*Leader, error) {
	ch := make(chan answer, 1)
	c.mu.Lock()
	if c.pending == nil {
		c.mu.Unlock()
		return nil, c.err
	}
	c.nextID++
	id := c.nextID
	c.pending[id] = ch
	c.mu.Unlock()
	m := &message{Op: opSpawn, ID: id, Path: r.Path, Args: r.Args, Dir: r.Dir, Env: r.Env,
		Setsid: r.Setsid, Setctty: r.Setctty, Clone: r.Clone}
	if err := c.send(m, r.Stdio[:]); err != nil {
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, err
	}
	select {
	case a, ok := <-ch:
		if !ok {
			return nil, c.err
		}
		if a.l == nil {
			return nil, &os.PathError{Op: "fork/exec", Path: r.Path, Err: syscall.Errno(a.m.Errno)}
		}
		return a.l, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// SetRoot tells the guard the host's runtime root, which it removes when the host is gone.
func (c *Client) SetRoot(root string) error {
	return c.send(&message{Op: opRoot, Root: root}, nil)
}

// Close asks the guard to end what is left of its trees and adopted processes, and waits for
// it to exit (or ctx to end, when it kills it).
func (c *Client) Close(ctx context.Context) error {
	c.send(&message{Op: opClose}, nil)
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Leader is a tree's leader as the guard holds it: a posix.Leader whose status the guard
// relays and which the guard reaps on request.
type Leader struct {
	c      *Client
	pid    int
	id     procinspect.Identity // as the guard read it while it held the leader; Start 0 when it could not
	exited chan struct{}
	e      posix.Exit
	err    error
	once   sync.Once
}

// Pid is the leader's pid.
func (l *Leader) Pid() int { return l.pid }

// gone ends a Leader whose guard has exited: the leader is no longer held (init reaps it).
func (l *Leader) gone(err error) {
	l.once.Do(func() {
		l.err = err
		select {
		case <-l.exited:
		default:
			close(l.exited)
		}
	})
}

// Wait implements posix.Leader. When the guard dies first, the leader is no longer held (init
// adopts it): Wait returns once it has exited, with reaped true and the status unknown.
func (l *Leader) Wait() (posix.Exit, bool, error) {
	<-l.exited
	if l.err != nil {
		if l.id.Start != 0 {
			posix.AwaitExit(context.Background(), l.id) // without a deadline it returns at the exit
		}
		return posix.Exit{Code: -1}, true, l.err
	}
	return l.e, false, nil
}

// Reap implements posix.Leader.
func (l *Leader) Reap() error {
	if l.err != nil {
		return nil // init has it
	}
	return l.c.send(&message{Op: opReap, Pid: l.pid}, nil)
}
