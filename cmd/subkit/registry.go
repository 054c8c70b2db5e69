package main

import (
	"errors"
	"maps"
	"slices"
	"sync"
)

// registry keeps one client's live things (background processes, code sessions) under
// unguessable ids, in the order they were added. Past keep entries, add drops the oldest
// that have ended (ended reports that), closing them; past limit entries it refuses a new
// one. closeAll closes every entry and refuses later adds.
type registry[T interface{ Close() error }] struct {
	prefix string       // of the ids: "bg-", "cs-"
	keep   int          // entries kept before ended ones are dropped; 0: no dropping
	ended  func(T) bool // an entry that may be dropped past keep
	limit  int          // entries at most; 0: no limit

	mu     sync.Mutex
	seq    int
	all    map[string]regEntry[T]
	closed bool
}

type regEntry[T any] struct {
	id  string
	seq int // order of adding
	v   T
}

// errRegistryFull is add's refusal at the registry's limit.
var errRegistryFull = errors.New("the limit of entries is reached")

// add keeps v under a new id. Past keep entries it drops and closes the oldest ended ones,
// and returns their close errors with the id; when it cannot keep v (the registry is closed:
// errLeaving; full: errRegistryFull) the id is "" and v is the caller's to close.
func (r *registry[T]) add(v T) (string, error) {
	r.mu.Lock()
	switch {
	case r.closed:
		r.mu.Unlock()
		return "", errLeaving
	case r.limit > 0 && len(r.all) >= r.limit:
		r.mu.Unlock()
		return "", errRegistryFull
	}
	if r.all == nil {
		r.all = map[string]regEntry[T]{}
	}
	r.seq++
	id := mcpNewID(r.prefix)
	r.all[id] = regEntry[T]{id: id, seq: r.seq, v: v}
	var drop []T
	if r.keep > 0 && len(r.all) > r.keep && r.ended != nil {
		for _, e := range r.ordered() {
			if len(r.all) <= r.keep {
				break
			}
			if r.ended(e.v) {
				delete(r.all, e.id)
				drop = append(drop, e.v)
			}
		}
	}
	r.mu.Unlock()
	var errs []error
	for _, v := range drop {
		errs = append(errs, v.Close())
	}
	return id, errors.Join(errs...)
}

// ordered is the entries in the order they were added; r.mu is held.
func (r *registry[T]) ordered() []regEntry[T] {
	return slices.SortedFunc(maps.Values(r.all), func(a, b regEntry[T]) int { return a.seq - b.seq })
}

// get is the entry of id.
func (r *registry[T]) get(id string) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.all[id]
	return e.v, ok
}

// remove takes the entry of id out of the registry; closing it is the caller's.
func (r *registry[T]) remove(id string) (T, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.all[id]
	if ok {
		delete(r.all, id)
	}
	return e.v, ok
}

// len is the number of entries.
func (r *registry[T]) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.all)
}

// list is the entries' ids and values in the order they were added.
func (r *registry[T]) list() []regEntry[T] {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ordered()
}

// closeAll closes every entry at once, waits for all of them and returns their errors
// joined; later adds are refused.
func (r *registry[T]) closeAll() error {
	r.mu.Lock()
	r.closed = true
	all := slices.Collect(maps.Values(r.all))
	r.all = nil
	r.mu.Unlock()
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, e := range all {
		wg.Go(func() {
			if err := e.v.Close(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
