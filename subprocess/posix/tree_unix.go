//go:build unix

package posix

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/subkit/subkit/procinspect"
)

// Tree is a spawned tree: its process group, plus the processes that left the group but
// carry the tree's cookie (found by Sweep).
type Tree struct {
	*Group
	cookie *Cookie

	mu      sync.Mutex
	escaped []procinspect.Identity
	found   bool // a sweep has found an escaped process
}

// NewTree returns the tree led by p, marked with c (which may be nil).
func NewTree(p *os.Process, c *Cookie) *Tree {
	return &Tree{Group: NewGroup(p), cookie: c}
}

// Signal sends sig to the tree's process group, falling back to the leader, like
// Group.Signal, with one more fence: once the leader has been reaped, the group's number
// outlives it only through other members, and after they are gone it can be handed to a
// stranger's group (pid numbers wrap; pid_max may be as small as 32768). So the group is
// signalled then only if one of its live members carries the tree's cookie; otherwise it is
// taken as gone for good. A member that cleared its environment is not recognised (the
// limit of the cookie method), and where environments cannot be read the fence is off.
func (t *Tree) Signal(sig syscall.Signal) error {
	if t.cookie != nil && canReadEnviron && errors.Is(t.leader.Signal(syscall.Signal(0)), os.ErrProcessDone) &&
		t.Group.Alive() && !t.groupCarriesCookie() {
		t.Group.forget()
		return nil
	}
	return t.Group.Signal(sig)
}

// groupCarriesCookie reports whether a live member of the group carries the tree's cookie.
// When the table cannot be read it answers true, keeping Group.Signal's own fences.
func (t *Tree) groupCarriesCookie() bool {
	ctx := context.Background()
	tab, err := procinspect.Snapshot(ctx)
	if err != nil {
		return true
	}
	want := t.cookie.name + "="
	for _, p := range tab.Group(t.pgid) {
		if p.Zombie {
			continue
		}
		env, _ := procinspect.Environ(ctx, p.Pid)
		for _, kv := range env {
			if strings.HasPrefix(kv, want) {
				return true
			}
		}
	}
	return false
}

// Sweep finds the processes that carry the tree's cookie outside its group, signals each
// (identity-fenced) and remembers them, so Alive and WaitGone account for them.
func (t *Tree) Sweep(ctx context.Context, sig syscall.Signal) error {
	if t.cookie == nil {
		return nil
	}
	found, err := t.cookie.Find(ctx, t.pgid)
	t.mu.Lock()
	t.found = t.found || len(found) > 0
	t.escaped = mergeIdentities(t.escaped, found)
	esc := append([]procinspect.Identity(nil), t.escaped...)
	t.mu.Unlock()
	return errors.Join(err, SignalAll(ctx, esc, sig))
}

// Finish ends, as SweepCookie does, the processes carrying the tree's cookie that are still
// alive, including ones that escapees started while they were being ended. When no sweep has
// found an escaped process, there is nothing to follow up and it reads nothing.
func (t *Tree) Finish(ctx context.Context, grace time.Duration) error {
	t.mu.Lock()
	found := t.found
	t.mu.Unlock()
	if t.cookie == nil || !found {
		return nil
	}
	return SweepCookie(ctx, t.cookie, grace)
}

// SignalAll sends sig to each identity that is still alive, fenced by start time.
func SignalAll(ctx context.Context, ids []procinspect.Identity, sig syscall.Signal) error {
	var errs []error
	for _, id := range ids {
		if _, err := SignalIdentity(ctx, id, sig); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Alive reports whether the group or any process found by Sweep is left.
func (t *Tree) Alive() bool {
	if t.Group.Alive() {
		return true
	}
	return len(t.liveEscaped()) > 0
}

// liveEscaped drops the swept processes that are gone and returns the rest.
func (t *Tree) liveEscaped() []procinspect.Identity {
	t.mu.Lock()
	defer t.mu.Unlock()
	live := t.escaped[:0]
	for _, id := range t.escaped {
		if ok, err := procinspect.Alive(context.Background(), id); ok || err != nil {
			live = append(live, id)
		}
	}
	t.escaped = live
	return live
}

// WaitGone returns once Alive is false, or with ctx's error.
func (t *Tree) WaitGone(ctx context.Context) error {
	return poll(ctx, t.Alive)
}

func mergeIdentities(a, b []procinspect.Identity) []procinspect.Identity {
	seen := make(map[procinspect.Identity]bool, len(a))
	for _, id := range a {
		seen[id] = true
	}
	for _, id := range b {
		if !seen[id] {
			seen[id] = true
			a = append(a, id)
		}
	}
	return a
}

// Members lists the live processes of the tree: the members of its group (unless the group
// has been seen empty) and the processes outside it that carry the tree's cookie.
func (t *Tree) Members(ctx context.Context) ([]procinspect.Proc, error) {
	tab, err := procinspect.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	var out []procinspect.Proc
	if t.Group.Alive() {
		for _, p := range tab.Group(t.pgid) {
			if !p.Zombie {
				out = append(out, p)
			}
		}
	}
	if t.cookie != nil {
		found, err := t.cookie.Find(ctx, t.pgid)
		if err != nil {
			return out, err
		}
		for _, id := range found {
			if p, ok := tab.Get(id.Pid); ok && p.Identity == id && !p.Zombie {
				out = append(out, p)
			}
		}
	}
	return out, nil
}
