//go:build unix

package lsp_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/lsp"
	"github.com/subkit/subkit/subprocess"
)

func startsIn(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(t, err)
	return strings.Count(string(b), "\n")
}

// A server that crashes after its second answer: the pool restarts it, re-opens the document
// (same version, same text) and the next request is answered by the new server.
func TestPoolRestartsAndReopens(t *testing.T) {
	e := newEnv(t)
	starts := filepath.Join(t.TempDir(), "starts")
	p, err := lsp.NewPool(e.svc, lsp.PoolConfig{Backoff: 10 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	cfg := lsp.Config{Path: fakeServer, Args: []string{"-crash-after=2", "-starts=" + starts}, Root: t.TempDir(), Grace: 500 * time.Millisecond}
	s, err := p.Get(ctxT(t, 30*time.Second), cfg)
	require.NoError(t, err)
	same, err := p.Get(ctxT(t, 30*time.Second), cfg)
	require.NoError(t, err)
	assert.Same(t, s, same, "one server per (command, root)")
	other, err := p.Get(ctxT(t, 30*time.Second), lsp.Config{Path: fakeServer, Root: t.TempDir()})
	require.NoError(t, err)
	assert.NotSame(t, s, other)
	assert.Len(t, p.Servers(), 2)

	first, err := s.Client(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	uri := lsp.FileURI(filepath.Join(cfg.Root, "a.txt"))
	_, err = first.Open(ctxT(t, 10*time.Second), uri, "plaintext", "one ERROR")
	require.NoError(t, err)
	v, err := first.Change(ctxT(t, 10*time.Second), uri, lsp.TextChange{Text: "two ERROR ERROR"})
	require.NoError(t, err)
	require.Equal(t, 2, v)
	var n int
	require.NoError(t, first.Call(ctxT(t, 10*time.Second), "test/echo", 1, &n)) // first request
	require.NoError(t, first.Call(ctxT(t, 10*time.Second), "test/echo", 2, &n)) // second: then it exits
	select {
	case <-first.Done():
	case <-ctxT(t, 10*time.Second).Done():
		t.Fatal("the server did not crash after its second answer")
	}
	assert.ErrorIs(t, first.Err(), lsp.ErrServerExited)

	// Client waits for the restarted server, which has the document.
	second, err := s.Client(ctxT(t, 30*time.Second))
	require.NoError(t, err)
	require.NoError(t, second.Call(ctxT(t, 10*time.Second), "test/echo", 3, &n))
	assert.Equal(t, 3, n)
	assert.NotSame(t, first, second)
	assert.NotEqual(t, first.Pid(), second.Pid())
	assert.Equal(t, 1, s.Restarts())
	assert.NoError(t, s.Err())
	assert.Equal(t, 2, startsIn(t, starts))
	text, version, open := serverText(t, second, uri) // its second request
	assert.True(t, open, "re-opened on the new server")
	assert.Equal(t, "two ERROR ERROR", text)
	assert.Equal(t, 2, version, "with the version it had")
	set, err := second.Diagnostics(ctxT(t, 10*time.Second), uri, 2)
	require.NoError(t, err)
	assert.Len(t, set.Diagnostics, 2)

	require.NoError(t, p.Close())
	require.NoError(t, p.Close(), "closing twice is safe")
	assert.Empty(t, testutil.Marked(e.mark), "every server of the pool is gone")
	_, err = p.Get(ctxT(t, time.Second), cfg)
	assert.ErrorIs(t, err, lsp.ErrClosed)
	_, err = s.Client(ctxT(t, time.Second))
	assert.ErrorIs(t, err, lsp.ErrClosed)
	assert.ErrorIs(t, err, subprocess.ErrClosed, "one test covers every closed adapter")

	// The pool never closes the caller's Service.
	c := e.start(t, lsp.Config{})
	require.NoError(t, c.Close())
}

// A server that crashes at every start: after MaxRestarts restarts, a typed error with the
// last stderr tail.
func TestPoolGivesUp(t *testing.T) {
	e := newEnv(t)
	starts := filepath.Join(t.TempDir(), "starts")
	p, err := lsp.NewPool(e.svc, lsp.PoolConfig{MaxRestarts: 3, Backoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	_, err = p.Get(ctxT(t, 60*time.Second), lsp.Config{Path: fakeServer, Args: []string{"-mode=crash-on-init", "-starts=" + starts}, Root: t.TempDir()})
	var limit *lsp.RestartLimitError
	require.ErrorAs(t, err, &limit)
	assert.ErrorIs(t, err, lsp.ErrRestartLimit)
	assert.ErrorIs(t, err, lsp.ErrServerExited, "it wraps the last crash")
	assert.Equal(t, 3, limit.Restarts)
	assert.Equal(t, 3*time.Minute, limit.Window, "the default window")
	assert.Contains(t, string(limit.Stderr), "fatal: cannot start: no workspace")
	assert.Contains(t, err.Error(), "gave up after 3 restarts")
	assert.Contains(t, err.Error(), "cannot start")
	assert.Equal(t, 4, startsIn(t, starts), "the first start and 3 restarts")
	servers := p.Servers()
	require.Len(t, servers, 1)
	assert.ErrorAs(t, servers[0].Err(), &limit)
	assert.Equal(t, 3, servers[0].Restarts())
	// Later callers get the same error at once; nothing is started again.
	_, err = p.Get(ctxT(t, 10*time.Second), lsp.Config{Path: fakeServer, Args: []string{"-mode=crash-on-init", "-starts=" + starts}, Root: limit.Key.Root})
	assert.ErrorAs(t, err, &limit)
	assert.Equal(t, 4, startsIn(t, starts))
	require.NoError(t, p.Close())
	assert.Empty(t, testutil.Marked(e.mark))
}

// A missing program or a bad Config is not retried.
func TestPoolStartErrors(t *testing.T) {
	e := newEnv(t)
	_, err := lsp.NewPool(nil, lsp.PoolConfig{})
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	_, err = lsp.NewPool(e.svc, lsp.PoolConfig{Backoff: -1})
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	p, err := lsp.NewPool(e.svc, lsp.PoolConfig{})
	require.NoError(t, err)
	_, err = p.Get(ctxT(t, 10*time.Second), lsp.Config{Path: "no-such-language-server-xyz", Root: t.TempDir()})
	assert.ErrorIs(t, err, subprocess.ErrNotFound)
	assert.NotErrorIs(t, err, lsp.ErrRestartLimit)
	_, err = p.Get(ctxT(t, 10*time.Second), lsp.Config{})
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	var nilCtx context.Context
	_, err = p.Get(nilCtx, lsp.Config{Path: fakeServer})
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	assert.ErrorIs(t, p.Shutdown(nilCtx), subprocess.ErrInvalid)
	var zero lsp.Pool
	_, err = zero.Get(context.Background(), lsp.Config{Path: fakeServer})
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	assert.ErrorIs(t, zero.Close(), subprocess.ErrInvalid)
	var zs lsp.Server
	_, err = zs.Client(context.Background())
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	require.NoError(t, p.Close())
}

// Shutdown ends every server, those that ignore shutdown and SIGTERM included (SIGKILL).
func TestPoolCloseConcurrent(t *testing.T) {
	e := newEnv(t)
	p, err := lsp.NewPool(e.svc, lsp.PoolConfig{})
	require.NoError(t, err)
	var clients []*lsp.Client
	for range 3 {
		s, err := p.Get(ctxT(t, 30*time.Second), lsp.Config{Path: fakeServer, Args: []string{"-mode=ignore-term"}, Root: t.TempDir(),
			ShutdownTimeout: 200 * time.Millisecond, Grace: 200 * time.Millisecond})
		require.NoError(t, err)
		c, err := s.Client(ctxT(t, 10*time.Second))
		require.NoError(t, err)
		clients = append(clients, c)
	}
	require.NoError(t, p.Shutdown(ctxT(t, 30*time.Second)))
	for _, c := range clients {
		exit, err := c.Shutdown(ctxT(t, time.Second)) // the report of the pool's shutdown
		require.NoError(t, err)
		assert.Equal(t, lsp.EndedKilled, exit.Ended)
	}
	assert.Empty(t, testutil.Marked(e.mark))
}

// Evict ends one server of the pool (its process gone, its documents forgotten) and the next
// Get starts a new one; the other servers go on.
func TestPoolEvict(t *testing.T) {
	e := newEnv(t)
	pool, err := lsp.NewPool(e.svc, lsp.PoolConfig{})
	require.NoError(t, err)
	t.Cleanup(func() { pool.Close() })
	ctx := ctxT(t, 60*time.Second)
	a := lsp.Config{Path: fakeServer, Root: t.TempDir(), Grace: 500 * time.Millisecond}
	b := lsp.Config{Path: fakeServer, Root: t.TempDir(), Grace: 500 * time.Millisecond}
	sa, err := pool.Get(ctx, a)
	require.NoError(t, err)
	sb, err := pool.Get(ctx, b)
	require.NoError(t, err)
	ca, err := sa.Client(ctx)
	require.NoError(t, err)
	_, err = ca.Open(ctx, lsp.FileURI(filepath.Join(a.Root, "x.txt")), "plaintext", "x")
	require.NoError(t, err)

	require.NoError(t, pool.Evict(ctx, sa.Key()))
	<-sa.Done()
	<-ca.Done()
	assert.ErrorIs(t, ca.Err(), lsp.ErrClosed)
	_, err = sa.Client(ctx)
	assert.ErrorIs(t, err, lsp.ErrClosed, "a caller still holding the evicted server is told so")
	assert.ErrorIs(t, pool.Evict(ctx, sa.Key()), lsp.ErrNoServer)
	assert.Len(t, pool.Servers(), 1)

	again, err := pool.Get(ctx, a)
	require.NoError(t, err)
	assert.NotSame(t, sa, again)
	c2, err := again.Client(ctx)
	require.NoError(t, err)
	assert.NotEqual(t, ca.Pid(), c2.Pid())
	assert.Empty(t, c2.Documents(), "a new server: the evicted one's documents are forgotten")
	cb, err := sb.Client(ctx)
	require.NoError(t, err)
	require.NoError(t, cb.Call(ctx, "test/echo", 1, nil), "the other server goes on")
	require.NoError(t, pool.Close())
	<-again.Done()
	<-sb.Done()
	assert.ErrorIs(t, pool.Evict(ctx, sb.Key()), lsp.ErrClosed)
}

// A server that nobody uses for PoolConfig.IdleTimeout is ended, its process gone. One whose
// start (here its initialize) takes several times IdleTimeout is not ended while it starts, nor
// as it becomes ready: the Get that waits for it gets it running.
func TestPoolIdleTimeout(t *testing.T) {
	e := newEnv(t)
	const idleFor = 300 * time.Millisecond
	pool, err := lsp.NewPool(e.svc, lsp.PoolConfig{IdleTimeout: idleFor})
	require.NoError(t, err)
	t.Cleanup(func() { pool.Close() })
	ctx := ctxT(t, 60*time.Second)
	slow := lsp.Config{Path: fakeServer, Args: []string{"-init-delay", (4 * idleFor).String()}, Root: t.TempDir(), Grace: 500 * time.Millisecond}
	for _, cfg := range []lsp.Config{{Path: fakeServer, Root: t.TempDir(), Grace: 500 * time.Millisecond}, slow} {
		idle, err := pool.Get(ctx, cfg)
		require.NoError(t, err, "%v", cfg.Args)
		// The Client call after Get may come after the idle limit on a busy machine: the server
		// is then ended already, and says so.
		if c, err := idle.Client(ctx); err != nil {
			assert.ErrorIs(t, err, lsp.ErrClosed)
		} else {
			<-c.Done()
			assert.ErrorIs(t, c.Err(), lsp.ErrClosed)
		}
		select {
		case <-idle.Done():
		case <-ctx.Done():
			t.Fatal("the idle server was never ended")
		}
		assert.Empty(t, pool.Servers())
		assert.Empty(t, testutil.Marked(e.mark), "its process is gone")
	}
	require.NoError(t, pool.Close())
}
