//go:build unix

package shell

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/subprocess"
)

func newManager(t *testing.T, cfg ManagerConfig) *Manager {
	t.Helper()
	sc, _ := testConfig(t)
	cfg.Session.ServiceConfig = sc.ServiceConfig
	m, err := NewManager(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, m.Close()) })
	return m
}

// At the cap, a new session prunes the least recently used exited one, never one of the 8
// most recently used; List shows state, cwd and idle time.
func TestShellManagerPrunesExitedFirst(t *testing.T) {
	m := newManager(t, ManagerConfig{})
	ctx := ctxT(t, 5*time.Minute)
	var ids []string
	for range DefaultMaxSessions {
		s, err := m.Open(ctx)
		require.NoError(t, err)
		ids = append(ids, s.ID())
	}
	assert.Equal(t, "1", ids[0])
	assert.Equal(t, "64", ids[63])

	// Sessions 9 and 5 exit, in this order: 9 is the least recently used exited one. Session
	// 2, never used since it opened, is the least recently used of all.
	for _, id := range []string{"9", "5"} {
		s, err := m.Get(id)
		require.NoError(t, err)
		st, err := s.Run(ctx, "exit 0", time.Minute)
		require.NoError(t, err)
		require.Equal(t, StateExited, st.State)
	}
	s1, err := m.Get("1")
	require.NoError(t, err)
	run(t, s1, "cd /")
	for i := 10; i < 10+DefaultProtectRecent; i++ { // the 8 most recently used now: 10..17
		s, err := m.Get(fmt.Sprint(i))
		require.NoError(t, err)
		run(t, s, "true")
	}

	s65, err := m.Open(ctx)
	require.NoError(t, err)
	assert.Equal(t, "65", s65.ID())
	_, err = m.Get("9")
	assert.ErrorIs(t, err, ErrNotFound, "the least recently used exited session was pruned")
	for _, id := range []string{"1", "2", "5", "10", "17", "64"} {
		_, err := m.Get(id)
		assert.NoError(t, err, "session %s", id)
	}
	list := m.List()
	require.Len(t, list, DefaultMaxSessions)
	assert.Equal(t, "1", list[0].ID)
	assert.Equal(t, "/", list[0].Cwd)
	assert.Equal(t, StateCompleted, list[0].State)
	assert.Equal(t, "65", list[len(list)-1].ID)
	for _, in := range list {
		assert.GreaterOrEqual(t, in.Idle, time.Duration(0))
		if in.ID == "5" {
			assert.Equal(t, StateExited, in.State)
		}
	}
	require.NoError(t, m.CloseSession("5"))
	assert.ErrorIs(t, m.CloseSession("5"), ErrNotFound)
}

// Without exited sessions the least recently used one goes, outside the protected ones.
func TestShellManagerPrunesLRU(t *testing.T) {
	m := newManager(t, ManagerConfig{MaxSessions: 4, ProtectRecent: 2})
	ctx := ctxT(t, time.Minute)
	var ss []*Session
	for range 4 {
		s, err := m.Open(ctx)
		require.NoError(t, err)
		ss = append(ss, s)
	}
	run(t, ss[0], "true") // order of use now: 2, 3, 4, 1 (1 most recent)
	_, err := m.Open(ctx)
	require.NoError(t, err)
	_, err = m.Get("2")
	assert.ErrorIs(t, err, ErrNotFound, "session 2 was the least recently used")
	_, err = ss[1].Run(ctx, "true", time.Second)
	assert.ErrorIs(t, err, ErrClosed, "a pruned session is closed")
	for _, id := range []string{"1", "3", "4", "5"} {
		_, err := m.Get(id)
		assert.NoError(t, err, id)
	}
	// Now by recency 5, 1, 4, 3: 5 and 1 are protected, 3 goes.
	_, err = m.Open(ctx)
	require.NoError(t, err)
	_, err = m.Get("3")
	assert.ErrorIs(t, err, ErrNotFound)
}

// One Service for every session: the caller's, never closed by the Manager; or the
// Manager's own, closed with it.
func TestShellManagerSharedService(t *testing.T) {
	cfg, _ := testConfig(t)
	svc, err := subprocess.New(cfg.ServiceConfig)
	require.NoError(t, err)
	m, err := NewManager(ManagerConfig{Session: Config{Service: svc}})
	require.NoError(t, err)
	s, err := m.Open(ctxT(t, time.Minute))
	require.NoError(t, err)
	assert.Equal(t, "x\n", run(t, s, "echo x").Output)
	require.NoError(t, m.Close())
	require.NoError(t, m.Close(), "closing twice is fine")
	_, err = m.Open(ctxT(t, time.Minute))
	assert.ErrorIs(t, err, ErrClosed)
	_, err = m.Get("1")
	assert.ErrorIs(t, err, ErrClosed)
	assert.DirExists(t, svc.RuntimeRoot(), "the caller's Service is not closed")
	require.NoError(t, svc.Close())

	var zero Manager
	_, err = zero.Open(ctxT(t, time.Minute))
	assert.ErrorIs(t, err, ErrInvalid)
	_, err = zero.Get("1")
	assert.ErrorIs(t, err, ErrInvalid)
	assert.ErrorIs(t, zero.Close(), ErrInvalid)
	assert.Nil(t, zero.List())
	for _, c := range []ManagerConfig{{MaxSessions: -1}, {MaxSessions: 4, ProtectRecent: 4}, {Session: Config{Rows: -1}}} {
		_, err := NewManager(c)
		assert.ErrorIs(t, err, ErrInvalid, "%+v", c)
	}
}

// 1,000 sessions opened and closed (8 at a time) leave no pty, descriptor, process or
// directory behind.
func TestShellThousandSessionsNoLeak(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 shells: not in -short")
	}
	cfg, mark := testConfig(t)
	svc, err := subprocess.New(cfg.ServiceConfig)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, svc.Close()) })
	before := ptys(t)
	ctx := ctxT(t, 10*time.Minute)
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	work := make(chan int)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				c := Config{Service: svc}
				if i%100 == 0 {
					c = cfg // now and then a session with a Service of its own
				}
				s, err := Open(ctx, c)
				if err != nil {
					errs <- err
					continue
				}
				if i%10 == 0 {
					if _, err := s.Run(ctx, fmt.Sprintf("sleep 1000 & echo %d", i), time.Minute); err != nil {
						errs <- err
					}
				}
				if err := s.Close(); err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range 1000 {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.Equal(t, before, ptys(t), "pty descriptors open before and after")
	assert.Empty(t, testutil.Marked(mark), "processes left")
	ents, err := os.ReadDir(svc.RuntimeRoot())
	require.NoError(t, err)
	assert.Empty(t, ents, "session directories left in the runtime root")
}

// ptys counts this process's descriptors open on a pty (master or slave).
func ptys(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip("no /proc/self/fd")
	}
	n := 0
	for _, e := range ents {
		l, _ := os.Readlink("/proc/self/fd/" + e.Name())
		if strings.HasPrefix(l, "/dev/pts/") || l == "/dev/ptmx" {
			n++
		}
	}
	return n
}

// NewID names the sessions: Get, List and CloseSession take its ids, and a counter's do not
// resolve.
func TestShellManagerNewID(t *testing.T) {
	n := 0
	m := newManager(t, ManagerConfig{NewID: func() string { n++; return fmt.Sprintf("x-%d", n) }})
	s, err := m.Open(ctxT(t, time.Minute))
	require.NoError(t, err)
	assert.Equal(t, "x-1", s.ID())
	got, err := m.Get("x-1")
	require.NoError(t, err)
	assert.Same(t, s, got)
	assert.Equal(t, "x-1", m.List()[0].ID)
	_, err = m.Get("1")
	assert.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, m.CloseSession("x-1"))
	assert.Empty(t, m.List())
}
