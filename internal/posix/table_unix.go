//go:build unix

package posix

import (
	"context"
	"sync"
	"time"

	"github.com/subkit/subkit/procinspect"
)

// Table reads the process table for the trees of one Service. A read asked for while another
// runs is served by the next one, which starts as soon as that ends and serves every caller
// waiting by then: a burst of trees ending at once costs a few reads, not one each. On Linux it
// also remembers what never changes about a process (its start token, whether it is a kernel
// thread), so a cookie sweep reads the stat file only of processes it has not seen before.
//
// Its zero value is ready to use. A nil *Table reads the table at every call.
type Table struct {
	census census // per OS: see census_*.go

	mu      sync.Mutex
	running bool
	next    *tableRound
}

type tableRound struct {
	groups map[int]bool // the process groups asked for
	after  int          // read only processes with pids above after; 0 reads all
	done   chan struct{}
	procs  []procinspect.Proc
	err    error
}

// read returns the members of group pgid whose pids are above after (all of them when after
// is 0), from a read of the table that started after the call.
func (t *Table) read(ctx context.Context, pgid, after int) ([]procinspect.Proc, error) {
	if t == nil {
		return readGroups(map[int]bool{pgid: true}, after)
	}
	t.mu.Lock()
	r := t.next
	if r == nil {
		r = &tableRound{groups: map[int]bool{}, after: after, done: make(chan struct{})}
		t.next = r
	}
	r.groups[pgid] = true
	r.after = min(r.after, after)
	if !t.running {
		t.running = true
		go t.loop()
	}
	t.mu.Unlock()
	select {
	case <-r.done:
		return r.procs, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// roundGap is the pause between rounds run back to back: trees that end in a burst then share
// a few reads, at the price of a millisecond of latency for those that wait.
const roundGap = time.Millisecond

// loop runs the rounds asked for, one at a time, and ends when none is waiting.
func (t *Table) loop() {
	for first := true; ; first = false {
		if !first {
			time.Sleep(roundGap)
		}
		t.mu.Lock()
		r := t.next
		t.next = nil
		if r == nil {
			t.running = false
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
		r.procs, r.err = readGroups(r.groups, r.after)
		close(r.done)
	}
}

// groupMembers lists the live (not zombie) members of group pgid other than its leader, whose
// pid is pgid. A member was started after the leader, so when the leader started moments ago
// (recent: the pid counter cannot have wrapped all the way round since), only the processes
// whose pids were handed out after the leader's are read; and when no pid at all has been
// handed out since, there is nothing to read. A member this misses keeps the group alive after
// the leader is reaped, which Tree.watchGroup checks.
func (t *Table) groupMembers(ctx context.Context, pgid int, recent bool) ([]procinspect.Identity, error) {
	after := 0
	if recent {
		last, ok := lastPid()
		switch {
		case ok && last == pgid:
			return nil, nil
		case ok && last > pgid:
			after = pgid
		}
	}
	procs, err := t.read(ctx, pgid, after)
	if err != nil {
		return nil, err
	}
	var live []procinspect.Identity
	for _, p := range procs {
		if p.Pgid == pgid && p.Pid != pgid && !p.Zombie {
			live = append(live, p.Identity)
		}
	}
	return live, nil
}
