// Package registry keeps live things under ids for the code that hands ids to a model: the
// shell package's Manager of sessions, and subkit mcp's background processes and code
// sessions. One type decides for all of them how ids are made, how many entries may live at
// once, which entry makes room for a new one, and how closing waits for entries in the making.
package registry

import (
	"errors"
	"io"
	"maps"
	"slices"
	"strconv"
	"sync"
)

// Errors of Reserve and Fill.
var (
	// ErrClosed: the Registry was closed; nothing new is kept.
	ErrClosed = errors.New("the registry is closed")
	// ErrFull: Config.Max entries are kept or being made and none of them may make room.
	ErrFull = errors.New("the limit of entries is reached")
)

// Config says how a Registry names and bounds its entries. The zero value keeps any number of
// entries under ids "1", "2", ...
type Config[T any] struct {
	// NewID makes each entry's id; it must never give one twice. nil means counters: "1",
	// "2", ... An id that reaches callers who must not guess each other's is random.
	NewID func() string
	// Max bounds the entries kept and being made at once; 0 means no bound. At Max, Reserve
	// makes room by evicting one entry outside the ProtectRecent most recently used: an ended
	// one first (Ended), the least recently used first; a live one only when EvictLive. With
	// nothing to evict it fails with ErrFull.
	Max int
	// ProtectRecent is how many of the most recently used entries are never evicted.
	ProtectRecent int
	// Ended reports whether an entry has ended (its process exited); nil means none has.
	Ended func(T) bool
	// EvictLive lets Reserve evict a live entry when no ended one may go.
	EvictLive bool
	// LastUse reports an entry's last use on a clock that only grows (the shell's sessions
	// count their own commands); nil means the Registry's own clock, advanced by Fill and Get.
	LastUse func(T) uint64
}

// Registry keeps entries by id in the order they were reserved. It is safe for concurrent use.
type Registry[T io.Closer] struct {
	cfg Config[T]

	mu      sync.Mutex
	seq     int // reservations so far: the order of entries, and the default ids
	clock   uint64
	all     map[string]*entry[T]
	making  int            // reserved, not yet filled or cancelled
	pending sync.WaitGroup // the same, for Close
	closed  bool
}

type entry[T any] struct {
	id   string
	seq  int
	used uint64
	v    T
}

// New makes a Registry of cfg.
func New[T io.Closer](cfg Config[T]) *Registry[T] {
	return &Registry[T]{cfg: cfg, all: map[string]*entry[T]{}}
}

// Slot is a place Reserve holds for one entry being made. Exactly one of Fill and Cancel
// ends it; later calls do nothing.
type Slot[T io.Closer] struct {
	r    *Registry[T]
	id   string
	seq  int
	done bool
}

// ID is the id the entry will have.
func (s *Slot[T]) ID() string { return s.id }

// Reserve holds a place for an entry about to be made, under a new id. At Config.Max it first
// evicts one entry (see Config.Max) and closes it, returning the close error as evictErr
// (wrapped with the entry's id) beside the Slot. err is ErrClosed or ErrFull, and then there is
// no Slot.
func (r *Registry[T]) Reserve() (slot *Slot[T], evictErr error, err error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, nil, ErrClosed
	}
	var victim *entry[T]
	if r.cfg.Max > 0 && len(r.all)+r.making >= r.cfg.Max {
		if victim = r.victimLocked(); victim == nil {
			r.mu.Unlock()
			return nil, nil, ErrFull
		}
		delete(r.all, victim.id)
	}
	r.seq++
	id := strconv.Itoa(r.seq)
	if r.cfg.NewID != nil {
		id = r.cfg.NewID()
	}
	r.making++
	r.pending.Add(1)
	slot = &Slot[T]{r: r, id: id, seq: r.seq}
	r.mu.Unlock()
	if victim != nil {
		if cerr := victim.v.Close(); cerr != nil {
			evictErr = errors.Join(errors.New("evicted entry "+victim.id), cerr)
		}
	}
	return slot, evictErr, nil
}

// Fill keeps v under the slot's id. It fails with ErrClosed when the Registry was closed
// meanwhile: v is then the caller's to close, and the slot stays held, so that Close waits,
// until Cancel.
func (s *Slot[T]) Fill(v T) error {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.done {
		return errors.New("registry: the slot was already filled or cancelled")
	}
	if r.closed {
		return ErrClosed
	}
	s.done = true
	r.making--
	r.pending.Done()
	r.clock++
	r.all[s.id] = &entry[T]{id: s.id, seq: s.seq, used: r.clock, v: v}
	return nil
}

// Cancel gives the slot back: its entry was not made, or Fill refused it and it was closed.
// Deferred right after Reserve, it frees the slot on every path, a panic included: after a
// Fill that kept the entry it does nothing.
func (s *Slot[T]) Cancel() {
	r := s.r
	r.mu.Lock()
	defer r.mu.Unlock()
	if s.done {
		return
	}
	s.done = true
	r.making--
	r.pending.Done()
}

// victimLocked picks the entry to evict, or nil; r.mu is held.
func (r *Registry[T]) victimLocked() *entry[T] {
	all := slices.SortedFunc(maps.Values(r.all), func(a, b *entry[T]) int { // most recently used first
		ua, ub := r.lastUse(a), r.lastUse(b)
		switch {
		case ua > ub:
			return -1
		case ua < ub:
			return 1
		}
		return b.seq - a.seq
	})
	if len(all) <= r.cfg.ProtectRecent {
		return nil
	}
	candidates := all[r.cfg.ProtectRecent:]
	if r.cfg.Ended != nil {
		for i := len(candidates) - 1; i >= 0; i-- {
			if r.cfg.Ended(candidates[i].v) {
				return candidates[i]
			}
		}
	}
	if r.cfg.EvictLive {
		return candidates[len(candidates)-1]
	}
	return nil
}

func (r *Registry[T]) lastUse(e *entry[T]) uint64 {
	if r.cfg.LastUse != nil {
		return r.cfg.LastUse(e.v)
	}
	return e.used
}

// Get is the entry of id, which counts as a use of it.
func (r *Registry[T]) Get(id string) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.all[id]
	if !ok {
		var zero T
		return zero, false
	}
	r.clock++
	e.used = r.clock
	return e.v, true
}

// Remove takes the entry of id out; closing it is the caller's.
func (r *Registry[T]) Remove(id string) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.all[id]
	if !ok {
		var zero T
		return zero, false
	}
	delete(r.all, id)
	return e.v, true
}

// Closed reports whether Close has begun.
func (r *Registry[T]) Closed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// Len is the number of entries kept.
func (r *Registry[T]) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.all)
}

// Entry is one kept entry, as List gives it.
type Entry[T any] struct {
	ID    string
	Value T
}

// List is the entries in the order they were reserved.
func (r *Registry[T]) List() []Entry[T] {
	r.mu.Lock()
	defer r.mu.Unlock()
	all := slices.SortedFunc(maps.Values(r.all), func(a, b *entry[T]) int { return a.seq - b.seq })
	out := make([]Entry[T], len(all))
	for i, e := range all {
		out[i] = Entry[T]{ID: e.id, Value: e.v}
	}
	return out
}

// Close refuses every later Reserve and Fill, closes every entry at once, waits for them and
// for the slots being filled, and returns the close errors joined. Later calls return nil.
func (r *Registry[T]) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	all := slices.Collect(maps.Values(r.all))
	clear(r.all)
	r.mu.Unlock()
	errs := make([]error, len(all))
	var wg sync.WaitGroup
	for i, e := range all {
		wg.Go(func() { errs[i] = e.v.Close() })
	}
	wg.Wait()
	r.pending.Wait()
	return errors.Join(errs...)
}
