package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subkit/subkit/bash"
	"github.com/subkit/subkit/coderuntime"
	"github.com/subkit/subkit/internal/registry"
	"github.com/subkit/subkit/lsp"
	"github.com/subkit/subkit/shell"
)

// errLeaving is the tool error of a call that arrives once its client's world is ending.
var errLeaving = errors.New("[request refused: the session is ending (the client left, or the server is shutting down); nothing ran]")

// mcpShare bounds what one client holds of the server: each server-wide ceiling is this many
// times one client's own limit, so no client can exhaust it alone.
const mcpShare = 4

// mcpWorld is what one client (one MCP session: an Mcp-Session-Id over HTTP, the connection
// over stdio) started and owns: its commands (a bash executor of its own: foreground calls,
// their lingering trees, background processes), its shell sessions, code sessions and
// language servers with their documents. Its ids are random and resolve only in it. When
// the client leaves, everything in it is ended.
type mcpWorld struct {
	s      *mcpServer
	exec   *bash.Executor
	shells *shell.Manager
	pool   *lsp.Pool
	lsp    lspState                                // the language-server tools' own state (mcp_lsp.go)
	bg     *registry.Registry[*bgProc]             // background processes (mcp_bash.go)
	cells  *registry.Registry[coderuntime.Session] // code sessions (mcp_code.go)

	life     context.Context // ends when the world starts ending: every call in progress is cancelled
	stopLife context.CancelFunc
	mu       sync.Mutex
	closing  bool
	inflight sync.WaitGroup // tool calls in progress
	once     sync.Once
	ended    chan struct{} // closed once everything in the world has ended
	endErr   error
}

func newWorld(s *mcpServer) (*mcpWorld, error) {
	w := &mcpWorld{s: s, bg: newBackground(), cells: newCodeSessions(), ended: make(chan struct{})}
	w.life, w.stopLife = context.WithCancel(context.Background())
	var err error
	if w.exec, err = bash.New(s.execCfg); err != nil {
		return nil, err
	}
	if w.shells, err = shell.NewManager(shell.ManagerConfig{Session: shell.Config{Service: s.svc, Dir: s.cwd, Logger: s.log},
		NewID: func() string { return mcpNewID("sh-") }}); err != nil {
		return nil, errors.Join(err, w.exec.Close())
	}
	if w.pool, err = lsp.NewPool(s.svc, lsp.PoolConfig{Logger: s.log, IdleTimeout: mcpLspIdle}); err != nil {
		return nil, errors.Join(err, w.shells.Close(), w.exec.Close())
	}
	return w, nil
}

// world is the world of the client whose call this is, made on its first call. When the
// session ends (DELETE, idle expiry, the end of the connection) the world is ended.
func (s *mcpServer) world(ss *mcp.ServerSession) (*mcpWorld, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, errLeaving
	}
	if w := s.worlds[ss]; w != nil {
		return w, nil
	}
	w, err := newWorld(s)
	if err != nil {
		return nil, fmt.Errorf("[tool failure: the session's commands could not be set up; nothing ran: %v]", err)
	}
	s.worlds[ss] = w
	if ss != nil {
		s.tasks.Go(func() {
			ss.Wait() // how the session ended is the SDK's to report
			s.endWorld(ss)
		})
	}
	return w, nil
}

// goTask runs f as one of the server's tasks, unless the server is shutting down (and ends
// everything itself).
func (s *mcpServer) goTask(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closing {
		s.tasks.Go(f)
	}
}

// worldOf is the world of session ss, if it has one.
func (s *mcpServer) worldOf(ss *mcp.ServerSession) *mcpWorld {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.worlds[ss]
}

// endWorld ends the world of ss and waits until everything in it has ended.
func (s *mcpServer) endWorld(ss *mcp.ServerSession) {
	s.mu.Lock()
	w := s.worlds[ss]
	delete(s.worlds, ss)
	s.mu.Unlock()
	if w == nil {
		return
	}
	if err := w.end(); err != nil {
		s.log.Warn("a client's processes could not all be ended", "session", ss.ID(), "err", err)
		s.mu.Lock()
		s.failed = append(s.failed, err)
		s.mu.Unlock()
	}
}

// enter admits a call into w unless it is ending; the context it returns ends with the
// call's or when the world starts ending.
func (w *mcpWorld) enter(ctx context.Context) (context.Context, func(), error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closing {
		return nil, nil, errLeaving
	}
	w.inflight.Add(1)
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(w.life, cancel)
	return ctx, func() { stop(); cancel(); w.inflight.Done() }, nil
}

// leave starts ending the world, once: new calls are refused, the calls in progress are
// cancelled (their trees end as on a client's cancel), and everything the world holds is
// closed, all at once.
func (w *mcpWorld) leave() {
	w.once.Do(func() {
		w.mu.Lock()
		w.closing = true
		w.mu.Unlock()
		w.stopLife()
		go func() { // awaited by end, which shutdown or the session's watcher calls
			w.endErr = w.close()
			close(w.ended)
		}()
	})
}

// end leaves the world and waits until everything in it has ended.
func (w *mcpWorld) end() error {
	w.leave()
	<-w.ended
	return w.endErr
}

// close ends what the world holds while its cancelled calls return, then the executor (the
// trees its foreground commands left) once they have. Errors are joined.
func (w *mcpWorld) close() error {
	var bgErr, cellErr, shellErr, poolErr error
	var wg sync.WaitGroup
	wg.Go(func() { bgErr = w.bg.Close() })
	wg.Go(func() { cellErr = w.cells.Close() })
	wg.Go(func() { shellErr = w.shells.Close() })
	wg.Go(func() { poolErr = w.pool.Close() })
	w.inflight.Wait()
	wg.Wait()
	return errors.Join(bgErr, cellErr, shellErr, poolErr, w.exec.Close())
}

// admit reserves a place under a server-wide ceiling for one more of what count counts in
// each world; release gives it back once the new one is counted (or was not made).
func (s *mcpServer) admit(what string, ceiling int, count func(*mcpWorld) int) (release func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.reserved[what]
	for _, w := range s.worlds {
		n += count(w)
	}
	if n >= ceiling {
		return nil, fmt.Errorf("[request refused, nothing was started: all clients of this server together have %d %s, "+
			"its limit; end one of yours, or try again once other clients have ended theirs]", ceiling, what)
	}
	s.reserved[what]++
	return func() {
		s.mu.Lock()
		s.reserved[what]--
		s.mu.Unlock()
	}, nil
}

// mcpNewID is a fresh id no client can guess: prefix and 80 random bits.
func mcpNewID(prefix string) string {
	return prefix + strings.ToLower(rand.Text()[:16])
}
