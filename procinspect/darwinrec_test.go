package procinspect

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/inspect/darwin"
)

func TestFromDarwin(t *testing.T) {
	r := darwin.Record{Pid: 2212, PPid: 2211, Pgid: 2212, Sid: 2211, Tpgid: 2212, Tty: 16 << 24,
		Stat: darwin.StatSleep, Start: 1763116277_999999, Comm: "sleep"}
	assert.Equal(t, Proc{Identity: Identity{Pid: 2212, Start: 1763116277_999999}, PPid: 2211, Pgid: 2212,
		Sid: 2211, Tpgid: 2212, Tty: 16 << 24, Comm: "sleep"}, fromDarwin(&r))
	r.Stat = darwin.StatZombie
	assert.True(t, fromDarwin(&r).Zombie)
}

// Microsecond tokens fence what whole seconds could not: pid 301 names a process that
// started in the same second as 300 but before it, so it is not 300's child (a stale
// parent pid), and 302, started after 300 in that second, is.
func TestTableFromDarwinFencesWithinASecond(t *testing.T) {
	const s = 1763116277_000000
	recs := []darwin.Record{
		{Pid: 1, Start: 1762157662_123456, Comm: "launchd", Sid: 1, Pgid: 1},
		{Pid: 300, PPid: 1, Pgid: 300, Sid: 300, Start: s + 500_000, Comm: "zsh"},
		{Pid: 301, PPid: 300, Pgid: 300, Sid: 300, Start: s + 499_999, Comm: "old"},
		{Pid: 302, PPid: 300, Pgid: 300, Sid: 300, Start: s + 500_001, Comm: "new"},
		{Pid: 303, PPid: 302, Pgid: 300, Sid: -1, Start: s + 600_000, Stat: darwin.StatZombie, Comm: "z"},
	}
	tab, err := tableFromDarwin(recs, nil)
	require.NoError(t, err)
	shell, ok := tab.Get(300)
	require.True(t, ok)
	var got []int
	for _, p := range tab.Descendants(shell.Identity) {
		got = append(got, p.Pid)
	}
	assert.Equal(t, []int{302, 303}, got)
	z, _ := tab.Get(303)
	assert.True(t, z.Zombie)
	assert.Len(t, tab.Session(300), 3)

	boom := errors.New("boom")
	_, err = tableFromDarwin(nil, boom)
	assert.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), "procinspect: snapshot")
}

func TestLookupFromDarwin(t *testing.T) {
	_, err := lookupFromDarwin(42, darwin.Record{}, fmt.Errorf("pid 42: %w", darwin.ErrNotFound))
	assert.ErrorIs(t, err, ErrNotFound)
	assert.ErrorIs(t, err, darwin.ErrNotFound)

	boom := &darwin.SysctlError{Name: "kern.proc.pid", Args: []int{42}, Err: errors.New("operation not permitted")}
	_, err = lookupFromDarwin(42, darwin.Record{}, boom)
	assert.NotErrorIs(t, err, ErrNotFound)
	var se *darwin.SysctlError
	assert.ErrorAs(t, err, &se)
	assert.Contains(t, err.Error(), "lookup pid 42: sysctl kern.proc.pid.42")

	p, err := lookupFromDarwin(42, darwin.Record{Pid: 42, Start: 7}, nil)
	require.NoError(t, err)
	assert.Equal(t, Identity{Pid: 42, Start: 7}, p.Identity)
}

func TestAliveFromDarwin(t *testing.T) {
	id := Identity{Pid: 42, Start: 1763116277_999999}
	ok, err := aliveFromDarwin(id, true, nil)
	assert.True(t, ok)
	assert.NoError(t, err)
	boom := errors.New("boom")
	ok, err = aliveFromDarwin(id, true, boom)
	assert.False(t, ok, "no answer but an error")
	assert.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), "alive 42@1763116277999999")
}
