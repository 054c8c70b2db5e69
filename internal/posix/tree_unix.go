//go:build unix

package posix

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/internal/backoff"
	"github.com/subkit/subkit/internal/done"
	"github.com/subkit/subkit/internal/ending"
	"github.com/subkit/subkit/procinspect"
)

// Exit is how a process ended.
type Exit struct {
	Code   int            // the exit status; -1 when a signal ended the process
	Signal syscall.Signal // the signal that ended the process, or 0
	Usage  Usage          // zero where the status came without it (macOS's kqueue)
}

// Usage is what a process consumed, from its wait status: its own and that of the descendants
// it waited for.
type Usage struct {
	User, System time.Duration // CPU time
	MaxRSS       int64         // the largest resident set size of any of them, in bytes
}

// Tree is a spawned tree: the process group its leader leads, plus the processes that left
// the group but carry the tree's cookie (found by Sweep).
//
// The leader is held: its exit is learnt from a pidfd (a kqueue on macOS) in the runtime
// poller, and its status is read without reaping it. While the unreaped leader exists, the
// kernel hands its pid, and so the group number, to no one else, so a signal to the group can
// reach only the tree's own members, whatever their environment says. Once the group has no
// live member (its leader's zombie aside), the leader is reaped and the group is never
// signalled again. Waiting costs no OS thread: the Tree learns of the exits of the members it
// waits for from their pidfds too, re-reads their stat with back-off to see whether they left
// the group, and reads the whole process table again only when none of them is a member any
// more.
type Tree struct {
	leader  Leader
	pid     int // the leader's pid, also the group's id
	started time.Time
	cookie  *Cookie
	table   *Table

	exited  chan struct{} // closed once the leader has exited; exit is set then
	exit    Exit
	exitErr error
	gone    chan struct{} // closed once the group has been seen without a live member
	reapErr error         // how reaping the leader failed, set before gone is closed

	mu      sync.Mutex
	pinned  bool // the leader is not reaped: the group number is the tree's
	empty   bool // the group has been seen without a live member: never signalled again
	escaped []procinspect.Identity
	found   bool // a sweep has found an escaped process
}

// NewTree watches the tree whose leader has pid (started with SysProcAttr, or as a session
// leader), learning of its exit and reaping it through leader, marked with c (which may be
// nil), reading the process table through tab (which may be nil).
func NewTree(pid int, leader Leader, c *Cookie, tab *Table) *Tree {
	t := &Tree{
		leader: leader, pid: pid, started: time.Now(), cookie: c, table: tab, pinned: true,
		exited: make(chan struct{}), gone: make(chan struct{}),
	}
	go t.watch()
	return t
}

// Pgid is the group's id.
func (t *Tree) Pgid() int { return t.pid }

// Exited is closed once the leader has exited.
func (t *Tree) Exited() <-chan struct{} { return t.exited }

// Exit is how the leader ended; call it once Exited is closed. The error says why the status
// is unknown (the leader was reaped by someone else, for instance).
func (t *Tree) Exit() (Exit, error) {
	<-t.exited
	return t.exit, t.exitErr
}

// Gone is closed once the leader has exited, its group has been seen without a live member,
// and the leader has been reaped. Processes that left the group are not waited for: see Alive.
func (t *Tree) Gone() <-chan struct{} { return t.gone }

// ReapErr is why reaping the leader failed, or nil; call it once Gone is closed.
func (t *Tree) ReapErr() error {
	<-t.gone
	return t.reapErr
}

// watch is the Tree's one goroutine: it waits for the leader's exit, then for its group to
// empty, and reaps the leader.
func (t *Tree) watch() {
	defer close(t.gone)
	var reaped bool
	t.exit, reaped, t.exitErr = t.leader.Wait()
	if reaped {
		t.markReaped() // the group number is then held only by its other members
	}
	close(t.exited)
	t.watchGroup()
}

// reap reaps the exited leader and marks it reaped, in one step for Signal: no group signal
// goes out between the two.
func (t *Tree) reap() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	err := t.leader.Reap()
	t.pinned = false
	return err
}

func (t *Tree) markReaped() {
	t.mu.Lock()
	t.pinned = false
	t.mu.Unlock()
}

// watchGroup returns once the group has been seen without a live member, having reaped the
// leader. Between reads of the table it waits for the members it saw to exit or leave.
func (t *Tree) watchGroup() {
	ctx := context.Background()
	var retry *backoff.Poller
	for {
		live, err := t.liveMembers(ctx)
		if errors.Is(err, procinspect.ErrUnsupported) {
			// No process table here: the group is gone when no process has its number,
			// zombies included.
			if t.isPinned() {
				t.reapErr = t.reap()
			}
			// Without a deadline the wait ends only when the group is gone.
			backoff.Until(ctx, backoff.Policy{}, func() (bool, error) {
				return errors.Is(unix.Kill(-t.pid, 0), unix.ESRCH), nil
			})
			t.markEmpty()
			return
		}
		if err != nil {
			// The table could not be read (out of descriptors?): look again, with back-off.
			if retry == nil {
				retry = backoff.Policy{}.Start()
			}
			retry.Wait(ctx) // without a deadline it only pauses
			continue
		}
		retry = nil
		if len(live) > 0 {
			t.waitMembers(ctx, live)
			continue
		}
		if !t.isPinned() {
			t.markEmpty()
			return
		}
		t.reapErr = t.reap()
		// A member that forked and exited while the table was read may have left a child the
		// read missed; with the leader reaped, the group exists only through such members.
		if errors.Is(unix.Kill(-t.pid, 0), unix.ESRCH) {
			t.markEmpty()
			return
		}
	}
}

// maxWatched bounds the members waited for at once: once these are gone, the table is read
// again, which finds the rest.
const maxWatched = 16

// waitMembers returns once none of ids (at most maxWatched of them) is a live member of the
// group any more: each has exited, which its pidfd tells at once, or left the group (setsid,
// setpgid), which a re-read of its stat with back-off tells.
func (t *Tree) waitMembers(ctx context.Context, ids []procinspect.Identity) {
	ids = ids[:min(len(ids), maxWatched)]
	exited := make(chan int, len(ids))
	for i, id := range ids {
		w, err := openPidWatch(id.Pid, false)
		if err != nil {
			continue // re-read with the others
		}
		defer w.close() // a wait still pending returns, and its goroutine ends
		go func() {
			w.wait()
			exited <- i
		}()
	}
	left := make(map[int]bool, len(ids))
	for i := range ids {
		left[i] = true
	}
	poll := backoff.Policy{}.Start()
	timer := time.NewTimer(poll.Next())
	defer timer.Stop()
	for len(left) > 0 {
		select {
		case i := <-exited:
			delete(left, i)
			continue
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		for i := range left {
			p, err := procinspect.Lookup(ctx, ids[i].Pid)
			if err != nil && errors.Is(err, procinspect.ErrNotFound) ||
				err == nil && (p.Identity != ids[i] || p.Zombie || p.Pgid != t.pid) {
				delete(left, i)
			}
		}
		timer.Reset(poll.Next())
	}
}

func (t *Tree) isPinned() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.pinned
}

func (t *Tree) markEmpty() {
	t.mu.Lock()
	t.empty = true
	t.mu.Unlock()
}

// recentFor is how long after its start a leader counts as recent for groupMembers: pids
// cannot have wrapped all the way round in so short a time.
const recentFor = time.Second

// liveMembers lists the group's members that are alive (not zombies), the leader excluded.
func (t *Tree) liveMembers(ctx context.Context) ([]procinspect.Identity, error) {
	return t.table.groupMembers(ctx, t.pid, time.Since(t.started) < recentFor)
}

// Signal sends sig to every member of the tree's group. While the leader is held the group
// number is the tree's, and the group is signalled as one; a leader that left its group is
// signalled too. Once the group has been seen empty it is never signalled again. In the rare
// case that a member was missed when the leader was reaped, the members still found in the
// group are signalled one by one, each fenced by its identity. A tree already gone is not an
// error.
func (t *Tree) Signal(sig syscall.Signal) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.empty:
		return nil
	case !t.pinned:
		live, err := t.liveMembers(context.Background())
		if errors.Is(err, procinspect.ErrUnsupported) {
			return ignoreGone(unix.Kill(-t.pid, sig))
		}
		return errors.Join(err, SignalAll(context.Background(), live, sig))
	}
	err := ignoreGone(unix.Kill(-t.pid, sig))
	if !done.Closed(t.exited) {
		if pgid, perr := unix.Getpgid(t.pid); perr == nil && pgid != t.pid {
			err = errors.Join(err, ignoreGone(unix.Kill(t.pid, sig))) // pinned: it is ours
		}
	}
	if err != nil {
		return fmt.Errorf("posix: signal %v to group %d: %w", sig, t.pid, err)
	}
	return nil
}

// ignoreGone drops ESRCH: the processes are already gone.
func ignoreGone(err error) error {
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	return err
}

// Sweep finds the processes that carry the tree's cookie outside its group, signals each
// (identity-fenced) and remembers them, so Alive and WaitGone account for them.
func (t *Tree) Sweep(ctx context.Context, sig syscall.Signal) error {
	if t.cookie == nil {
		return nil
	}
	found, err := t.cookie.Find(ctx, t.skipPgid())
	t.mu.Lock()
	t.found = t.found || len(found) > 0
	t.escaped = mergeIdentities(t.escaped, found)
	esc := append([]procinspect.Identity(nil), t.escaped...)
	t.mu.Unlock()
	return errors.Join(err, SignalAll(ctx, esc, sig))
}

// skipPgid is the group a sweep need not look in: the tree's own, while group signals reach it.
func (t *Tree) skipPgid() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.empty {
		return 0
	}
	return t.pid
}

// Rediscover implements ending.Rediscoverer: it returns the processes carrying the tree's
// cookie that are alive now, including ones that escapees started while they were being
// ended, as a target to end in turn (nil when there are none). When no sweep has found an
// escaped process, there is nothing to follow up and it reads nothing.
func (t *Tree) Rediscover(ctx context.Context) (ending.Target, error) {
	t.mu.Lock()
	found := t.found
	t.mu.Unlock()
	if t.cookie == nil || !found {
		return nil, nil
	}
	return t.cookie.Carriers(ctx)
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

// Alive reports whether the group may still have a live member, or a process found by Sweep
// is left. Once the leader has exited, and until Gone tells, it reads the table (a read shared
// with the Tree's own watch).
func (t *Tree) Alive() bool {
	if !done.Closed(t.gone) {
		if !done.Closed(t.exited) {
			return true
		}
		live, err := t.liveMembers(context.Background())
		if err != nil || len(live) > 0 {
			return true
		}
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
	select {
	case <-t.gone:
	case <-ctx.Done():
		return ctx.Err()
	}
	return backoff.Until(ctx, backoff.Policy{}, func() (bool, error) { return len(t.liveEscaped()) == 0, nil })
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
	skip := t.skipPgid()
	if skip != 0 {
		for _, p := range tab.Group(t.pid) {
			if !p.Zombie {
				out = append(out, p)
			}
		}
	}
	if t.cookie != nil {
		found, err := t.cookie.Find(ctx, skip)
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
