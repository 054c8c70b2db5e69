package registry_test

import (
	"errors"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/subkit/subkit/internal/registry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type live struct {
	ended  bool
	closed atomic.Int32
	err    error
}

func (f *live) Close() error { f.closed.Add(1); return f.err }

func ended(f *live) bool { return f.ended }

// add keeps v, already made, under a new id, as Reserve then Fill.
func add(r *registry.Registry[*live], v *live) (id string, evictErr error, err error) {
	slot, evictErr, err := r.Reserve()
	if err != nil {
		return "", evictErr, err
	}
	defer slot.Cancel()
	if err := slot.Fill(v); err != nil {
		return "", evictErr, err
	}
	return slot.ID(), evictErr, nil
}

// At Max, the oldest ended entry makes room (closed); live ones stay however old; with
// nothing ended a new one is refused; Close closes every entry and refuses later adds.
func TestEvictsEndedFirstThenRefuses(t *testing.T) {
	r := registry.New(registry.Config[*live]{Max: 2, Ended: ended})
	running, old, newer := &live{}, &live{ended: true}, &live{ended: true}
	var ids []string
	for _, f := range []*live{running, old, newer} {
		id, evictErr, err := add(r, f)
		require.NoError(t, err)
		require.NoError(t, evictErr)
		ids = append(ids, id)
	}
	assert.Equal(t, []string{"1", "2", "3"}, ids, "counter ids by default")
	assert.Equal(t, 2, r.Len())
	_, ok := r.Get(ids[1])
	assert.False(t, ok, "the oldest ended entry was evicted")
	assert.EqualValues(t, 1, old.closed.Load())
	got, ok := r.Get(ids[0])
	assert.True(t, ok, "a running entry stays")
	assert.Same(t, running, got)
	list := r.List()
	require.Len(t, list, 2)
	assert.Equal(t, []string{ids[0], ids[2]}, []string{list[0].ID, list[1].ID}, "in the order they were added")

	newer.ended = false
	id, _, err := add(r, &live{})
	assert.Empty(t, id)
	assert.ErrorIs(t, err, registry.ErrFull, "nothing ended and live ones are not evicted")

	got, ok = r.Remove(ids[2])
	assert.True(t, ok)
	assert.Same(t, newer, got)
	assert.Zero(t, newer.closed.Load(), "closing a removed entry is the caller's")

	require.NoError(t, r.Close())
	require.NoError(t, r.Close(), "twice")
	assert.EqualValues(t, 1, running.closed.Load())
	assert.Zero(t, r.Len())
	id, _, err = add(r, &live{})
	assert.Empty(t, id)
	assert.ErrorIs(t, err, registry.ErrClosed)
}

// With EvictLive and ProtectRecent (the shell's sessions): the protected most recently used
// never go; outside them an ended one goes first, else the least recently used; a Get is a use.
func TestEvictsLeastRecentlyUsedOutsideTheProtected(t *testing.T) {
	r := registry.New(registry.Config[*live]{Max: 3, ProtectRecent: 1, Ended: ended, EvictLive: true})
	a, b, c := &live{}, &live{}, &live{}
	ida, _, _ := add(r, a)
	idb, _, _ := add(r, b)
	_, _, _ = add(r, c)
	_, ok := r.Get(ida) // a is now the most recently used: protected
	require.True(t, ok)
	_, _, err := add(r, &live{})
	require.NoError(t, err)
	assert.EqualValues(t, 1, b.closed.Load(), "b is the least recently used outside the protected one")
	_, ok = r.Get(idb)
	assert.False(t, ok)
	assert.Zero(t, a.closed.Load())
	c.ended = true
	_, ok = r.Get(ida)
	require.True(t, ok)
	_, _, err = add(r, &live{})
	require.NoError(t, err)
	assert.EqualValues(t, 1, c.closed.Load(), "the ended one goes before any live one")
	require.NoError(t, r.Close())

	one := registry.New(registry.Config[*live]{Max: 1, ProtectRecent: 1, EvictLive: true})
	_, _, err = add(one, &live{})
	require.NoError(t, err)
	_, _, err = add(one, &live{})
	assert.ErrorIs(t, err, registry.ErrFull, "the only entry is protected")
	require.NoError(t, one.Close())
}

// A slot counts toward Max while its entry is made; Close waits for it, and a Fill after
// Close is refused while the slot stays held, so the caller closes what it made before Close
// returns; an eviction's close error is returned beside the slot, naming the entry.
func TestSlots(t *testing.T) {
	r := registry.New(registry.Config[*live]{Max: 1, NewID: func() string { return "fixed" }})
	slot, _, err := r.Reserve()
	require.NoError(t, err)
	assert.Equal(t, "fixed", slot.ID())
	_, _, err = r.Reserve()
	assert.ErrorIs(t, err, registry.ErrFull, "a reserved slot counts")
	slot.Cancel()
	slot.Cancel()
	slot, _, err = r.Reserve()
	require.NoError(t, err)

	closed := make(chan error)
	go func() { closed <- r.Close() }()
	v := &live{}
	// Close cannot return before the slot ends; Fill either lands first (then Close closes
	// v) or is refused (then v is ours to close, before Cancel lets Close return). Either way
	// v is closed exactly once by the time Close returns.
	if err := slot.Fill(v); err != nil {
		assert.ErrorIs(t, err, registry.ErrClosed)
		select {
		case <-closed:
			t.Fatal("Close returned while a refused slot was held")
		default:
		}
		require.NoError(t, v.Close())
	}
	slot.Cancel()
	require.NoError(t, <-closed)
	assert.EqualValues(t, 1, v.closed.Load())
	assert.Error(t, slot.Fill(&live{}), "a slot is filled once")

	boom := errors.New("boom")
	e := registry.New(registry.Config[*live]{Max: 1, EvictLive: true})
	_, _, err = add(e, &live{err: boom})
	require.NoError(t, err)
	_, evictErr, err := add(e, &live{})
	require.NoError(t, err)
	assert.ErrorIs(t, evictErr, boom)
	assert.ErrorContains(t, evictErr, "evicted entry 1")
	require.NoError(t, e.Close())
}
