//go:build unix

package posix

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// SysProcAttr returns the attributes that detach a child into a process group of its own,
// whose id is the child's pid.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// Group is the process group of one spawned tree. Its pgid is the leader's pid.
//
// Once a liveness probe has seen the group empty, the Group never signals that pgid again: the
// number may then be reused by an unrelated group. While any member exists the kernel does not
// hand the number out again, so a group seen alive is safe to signal.
type Group struct {
	leader *os.Process
	pgid   int

	mu      sync.Mutex
	gone    bool
	members []int // pids last seen in the group, checked first by zombiesOnly
}

// NewGroup returns the group led by p, which must have been started with SysProcAttr.
func NewGroup(p *os.Process) *Group {
	return &Group{leader: p, pgid: p.Pid}
}

// Pgid is the group's id.
func (g *Group) Pgid() int { return g.pgid }

// Signal sends sig to every member of the group. When the group cannot be signalled (the
// leader changed its group, or the group is gone) it falls back to the direct child, through
// os.Process, which cannot hit a reused pid. A tree already gone is not an error.
func (g *Group) Signal(sig syscall.Signal) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gone {
		return nil
	}
	// Probe first: a group that emptied since the last probe must not be signalled, as its
	// number may already name a stranger's group.
	err := unix.Kill(-g.pgid, 0)
	if err == nil {
		err = unix.Kill(-g.pgid, sig)
	}
	if err == nil {
		return nil
	}
	if errors.Is(err, unix.ESRCH) {
		g.gone = true
	}
	perr := g.leader.Signal(sig)
	if perr == nil || errors.Is(perr, os.ErrProcessDone) {
		return nil
	}
	if errors.Is(err, unix.ESRCH) && errors.Is(perr, unix.ESRCH) {
		return nil
	}
	return fmt.Errorf("posix: signal %v to group %d: %w (direct child: %v)", sig, g.pgid, err, perr)
}

// forget marks the group gone: it is never probed or signalled again.
func (g *Group) forget() {
	g.mu.Lock()
	g.gone = true
	g.mu.Unlock()
}

// Alive reports whether any live member of the group is left. A group whose members are all
// zombies is not alive: members orphaned by the leader are reaped by init (or a subreaper),
// which may take its time, and nothing can run in them any more. Such a group is not yet
// empty, though, so its number stays signal-safe until it is.
func (g *Group) Alive() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gone {
		return false
	}
	err := unix.Kill(-g.pgid, 0)
	if errors.Is(err, unix.ESRCH) {
		g.gone = true
		return false
	}
	// nil or EPERM (a member now runs as another user): someone is there, unless every
	// member is a zombie.
	return err != nil || !zombiesOnly(g.pgid, &g.members)
}

// Poll back-off for WaitGone: the first probes come fast so short-lived trees settle within a
// few milliseconds, and the spacing grows with the wait so a daemon watched for hours costs
// next to nothing.
const pollFirst = 500 * time.Microsecond

func pollCap(waited time.Duration) time.Duration {
	switch {
	case waited < time.Second:
		return 2 * time.Millisecond
	case waited < 10*time.Second:
		return 10 * time.Millisecond
	}
	return 50 * time.Millisecond
}

// WaitGone returns nil once the group has no member, or ctx's error.
func (g *Group) WaitGone(ctx context.Context) error { return poll(ctx, g.Alive) }

// poll waits until alive reports false, probing with back-off.
func poll(ctx context.Context, alive func() bool) error {
	start := time.Now()
	d := pollFirst
	var t *time.Timer
	for alive() {
		if t == nil {
			t = time.NewTimer(d)
			defer t.Stop()
		} else {
			t.Reset(d)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
		d = min(2*d, pollCap(time.Since(start)))
	}
	return nil
}
