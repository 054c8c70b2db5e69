package main

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type fakeLive struct {
	ended  bool
	closed atomic.Int32
}

func (f *fakeLive) Close() error { f.closed.Add(1); return nil }

// Past keep entries the oldest ended ones go (closed); running ones stay however old; past
// limit a new one is refused; after closeAll every entry is closed and adds are refused.
func TestRegistry(t *testing.T) {
	r := &registry[*fakeLive]{prefix: "x-", keep: 2, ended: func(f *fakeLive) bool { return f.ended }}
	running, old, newer := &fakeLive{}, &fakeLive{ended: true}, &fakeLive{ended: true}
	var ids []string
	for _, f := range []*fakeLive{running, old, newer} {
		id, err := r.add(f)
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(id, "x-"), id)
		ids = append(ids, id)
	}
	assert.Equal(t, 2, r.len())
	_, ok := r.get(ids[1])
	assert.False(t, ok, "the oldest ended entry is dropped")
	assert.EqualValues(t, 1, old.closed.Load())
	got, ok := r.get(ids[0])
	assert.True(t, ok, "a running entry stays")
	assert.Same(t, running, got)
	list := r.list()
	require.Len(t, list, 2)
	assert.Equal(t, []string{ids[0], ids[2]}, []string{list[0].id, list[1].id}, "in the order they were added")

	got, ok = r.remove(ids[2])
	assert.True(t, ok)
	assert.Same(t, newer, got)
	assert.Zero(t, newer.closed.Load(), "closing a removed entry is the caller's")

	limited := &registry[*fakeLive]{prefix: "y-", limit: 1}
	_, err := limited.add(&fakeLive{})
	require.NoError(t, err)
	id, err := limited.add(&fakeLive{})
	assert.Empty(t, id)
	assert.True(t, errors.Is(err, errRegistryFull))

	require.NoError(t, r.closeAll())
	assert.EqualValues(t, 1, running.closed.Load())
	assert.Zero(t, r.len())
	id, err = r.add(&fakeLive{})
	assert.Empty(t, id)
	assert.True(t, errors.Is(err, errLeaving))
}
