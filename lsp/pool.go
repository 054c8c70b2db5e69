package lsp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/subkit/subkit/internal/backoff"
	"github.com/subkit/subkit/internal/errtext"
	"github.com/subkit/subkit/subprocess"
)

// Defaults applied to zero fields of a PoolConfig.
const (
	defaultMaxRestarts   = 5
	defaultRestartWindow = 3 * time.Minute
	defaultBackoff       = 250 * time.Millisecond
	defaultMaxBackoff    = 10 * time.Second
	defaultStartTimeout  = time.Minute
)

// ErrRestartLimit is wrapped by every *RestartLimitError.
var ErrRestartLimit = errors.New("server keeps crashing; restart limit reached")

// PoolConfig says how a Pool restarts its servers. Zero fields take the documented defaults.
type PoolConfig struct {
	// MaxRestarts is how many restarts of one server are allowed within RestartWindow; the
	// next crash (or failed start) gives up with a *RestartLimitError. 0 means 5; a negative
	// value means no restart at all.
	MaxRestarts int
	// RestartWindow is the sliding window MaxRestarts counts in; 0 means 3 minutes.
	RestartWindow time.Duration
	// Backoff is the pause before the first restart; each further restart within the window
	// doubles it, up to MaxBackoff. 0 means 250ms and 10s.
	Backoff    time.Duration
	MaxBackoff time.Duration
	// IdleTimeout, when positive, ends a server that no Get and no Server call has used for
	// that long (Evict): its processes end and its documents are forgotten; the next Get of
	// its key starts a new one. A server is not idle while it starts, and the time counts
	// from the end of its last start at the earliest. 0 keeps servers until Evict or Shutdown.
	IdleTimeout time.Duration
	// StartTimeout bounds each start of a server (spawn, initialize, and re-opening its
	// documents); 0 means a minute.
	StartTimeout time.Duration
	// Logger receives the pool's diagnostics (crashes, restarts); nil: none.
	Logger *slog.Logger
}

// Key identifies a server of a Pool: its command line and its workspace root (absolute).
type Key struct {
	Command string // Config.Path and Config.Args, each quoted, space-separated
	Root    string
}

func (k Key) String() string { return k.Command + " in " + k.Root }

// RestartLimitError says that a server crashed (or failed to start) more than
// PoolConfig.MaxRestarts times within PoolConfig.RestartWindow, and how it last ended.
type RestartLimitError struct {
	Key      Key
	Restarts int           // restarts made within the window
	Window   time.Duration // PoolConfig.RestartWindow
	// Last is the error of the last crash or failed start (often a *ServerExitError), and
	// Stderr the tail of that server's stderr.
	Last   error
	Stderr []byte
}

func (e *RestartLimitError) Error() string {
	why := fmt.Sprintf("gave up after %d restarts within %v", e.Restarts, e.Window)
	var exit *ServerExitError
	if !errors.As(e.Last, &exit) {
		if last := lastLines(e.Stderr, 3, 400); last != "" {
			why += "; stderr ends: " + strconv.Quote(last)
		}
	}
	var last error
	if e.Last != nil {
		last = fmt.Errorf("last: %w", e.Last)
	}
	return errtext.Format("lsp", "restart", e.Key.String(), errors.New(why), last,
		"fix the server or its configuration, then use a new Pool")
}

// Is reports whether target is ErrRestartLimit.
func (e *RestartLimitError) Is(target error) bool { return target == ErrRestartLimit }

// Unwrap returns Last.
func (e *RestartLimitError) Unwrap() error { return e.Last }

// Pool keeps language servers keyed by (command, root): started on first use, shared by every
// caller of the same key, restarted with back-off after a crash (their open documents
// re-opened on the new server, with the same versions and texts), and given up with a
// *RestartLimitError when they crash too often. All methods are safe for concurrent use.
//
// The Pool runs its servers on the caller's Service and never closes it.
type Pool struct {
	svc *subprocess.Service
	cfg PoolConfig
	log *slog.Logger

	ctx    context.Context // ends at Shutdown: cancels starts and back-off pauses
	cancel context.CancelFunc
	wg     sync.WaitGroup // the supervisors

	mu      sync.Mutex
	servers map[Key]*Server
	closed  bool

	idleWake chan struct{} // wakes the idle janitor when a server is added; nil without IdleTimeout

	shutOnce sync.Once
	shutErr  error
	shutDone chan struct{}
}

// NewPool returns a Pool that runs servers on svc (the caller's: the Pool never closes it).
func NewPool(svc *subprocess.Service, cfg PoolConfig) (*Pool, error) {
	switch {
	case svc == nil:
		return nil, invalidArg("new pool", "", "NewPool needs a *subprocess.Service")
	case cfg.RestartWindow < 0, cfg.Backoff < 0, cfg.MaxBackoff < 0, cfg.StartTimeout < 0, cfg.IdleTimeout < 0:
		return nil, invalidArg("new pool", "PoolConfig", "RestartWindow/Backoff/MaxBackoff/StartTimeout/IdleTimeout negative; use 0 for the default")
	}
	if cfg.MaxRestarts == 0 {
		cfg.MaxRestarts = defaultMaxRestarts
	}
	if cfg.RestartWindow == 0 {
		cfg.RestartWindow = defaultRestartWindow
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = defaultBackoff
	}
	if cfg.MaxBackoff == 0 {
		cfg.MaxBackoff = max(defaultMaxBackoff, cfg.Backoff)
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = defaultStartTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pool{svc: svc, cfg: cfg, log: cfg.Logger, ctx: ctx, cancel: cancel,
		servers: map[Key]*Server{}, shutDone: make(chan struct{})}
	if cfg.IdleTimeout > 0 {
		p.idleWake = make(chan struct{}, 1)
		p.wg.Add(1)
		go p.janitor()
	}
	return p, nil
}

// ErrNoServer: Evict named a key the pool holds no server for.
var ErrNoServer = errors.New("no server of that key in the pool")

// Evict ends the server of key and takes it out of the pool: its processes are shut down
// (as Client.Shutdown does) and its documents forgotten; callers holding it get ErrClosed,
// and the next Get of key starts a new server. It waits, bounded by ctx, until the server is
// gone (the ending goes on after ctx ends; Server.Done says when it is over). It fails with
// ErrNoServer when the pool holds no such server, ErrClosed after Shutdown.
func (p *Pool) Evict(ctx context.Context, key Key) error {
	if p == nil || p.svc == nil {
		return invalidArg("evict", "", "not a Pool from NewPool")
	}
	if ctx == nil {
		return invalidArg("evict", "", "nil context")
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return newError("evict", key.String(), ErrClosed, nil)
	}
	s := p.servers[key]
	if s != nil {
		delete(p.servers, key)
		s.startEnd()
	}
	p.mu.Unlock()
	if s == nil {
		return newError("evict", key.String(), ErrNoServer, nil)
	}
	return s.waitEnd(ctx)
}

// startEnd begins ending s, once: the supervisor stops, then every client it started is
// closed. Call it with p.mu held (the pool's WaitGroup counts the ending).
func (s *Server) startEnd() {
	s.endOnce.Do(func() {
		s.cancel()
		s.p.wg.Add(1)
		go func() {
			defer s.p.wg.Done()
			<-s.supDone
			var mu sync.Mutex
			var errs []error
			var all sync.WaitGroup
			for _, c := range s.clients() {
				all.Go(func() {
					if err := c.Close(); err != nil {
						mu.Lock()
						errs = append(errs, newError("end", s.key.String(), nil, err))
						mu.Unlock()
					}
				})
			}
			all.Wait()
			s.endErr = errors.Join(errs...)
			close(s.ended)
		}()
	})
}

func (s *Server) waitEnd(ctx context.Context) error {
	select {
	case <-s.ended:
		return s.endErr
	case <-ctx.Done():
		return ctxError("end", s.key.String(), ctx.Err())
	}
}

// Done is closed once the server has been taken out of the pool (Evict, the idle limit,
// Shutdown) and its processes are gone.
func (s *Server) Done() <-chan struct{} {
	if s == nil || s.ended == nil {
		return closedDone()
	}
	return s.ended
}

func closedDone() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

func (s *Server) touch() { s.lastUse.Store(time.Now().UnixNano()) }

// janitor evicts the servers left idle for PoolConfig.IdleTimeout. It sleeps until the
// earliest moment one may have become idle.
func (p *Pool) janitor() {
	defer p.wg.Done()
	t := time.NewTimer(p.cfg.IdleTimeout)
	defer t.Stop()
	for {
		select {
		case <-p.ctx.Done():
			return
		case <-p.idleWake:
		case <-t.C:
		}
		now := time.Now()
		next := p.cfg.IdleTimeout
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return
		}
		for key, s := range p.servers {
			if s.starting.Load() { // in use: someone is about to call it; looked at again within IdleTimeout
				continue
			}
			idle := now.Sub(time.Unix(0, s.lastUse.Load()))
			if idle >= p.cfg.IdleTimeout {
				delete(p.servers, key)
				s.startEnd()
				p.log.Info("lsp: pool: ending an idle server", "server", key.String(), "idle", idle)
				continue
			}
			next = min(next, p.cfg.IdleTimeout-idle)
		}
		p.mu.Unlock()
		if !t.Stop() {
			select {
			case <-t.C:
			default:
			}
		}
		t.Reset(next)
	}
}

// KeyOf returns the key cfg has in a pool running on svc.
func KeyOf(svc *subprocess.Service, cfg Config) (Key, error) {
	if svc == nil {
		return Key{}, invalidArg("key", "", "KeyOf needs a *subprocess.Service")
	}
	cfg, err := cfg.withDefaults(svc)
	if err != nil {
		return Key{}, err
	}
	parts := []string{strconv.Quote(cfg.Path)}
	for _, a := range cfg.Args {
		parts = append(parts, strconv.Quote(a))
	}
	return Key{Command: strings.Join(parts, " "), Root: cfg.Root}, nil
}

// Get returns the server of cfg's key, starting it on first use, and waits (bounded by ctx)
// until it runs. Callers of the same key share one server; the Config of the first one is
// the one used (later ones only name the key). It fails with the start's error (a bad Config,
// a server not found: at once, without restarts), with a *RestartLimitError when the server
// crashes at every start, with ErrClosed after Shutdown, or with ctx's error (the server goes
// on starting for later callers).
func (p *Pool) Get(ctx context.Context, cfg Config) (*Server, error) {
	if p == nil || p.svc == nil {
		return nil, invalidArg("get", "", "not a Pool from NewPool")
	}
	if ctx == nil {
		return nil, invalidArg("get", "", "nil context")
	}
	key, err := KeyOf(p.svc, cfg)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, newError("get", key.String(), ErrClosed, nil)
	}
	s := p.servers[key]
	if s == nil {
		s = &Server{p: p, key: key, cfg: cfg, changed: make(chan struct{}), supDone: make(chan struct{}), ended: make(chan struct{})}
		s.ctx, s.cancel = context.WithCancel(p.ctx)
		p.servers[key] = s
		p.wg.Add(1)
		go s.supervise()
		if p.idleWake != nil {
			select {
			case p.idleWake <- struct{}{}:
			default:
			}
		}
	}
	s.touch()
	p.mu.Unlock()
	if _, err := s.Client(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// Servers returns the pool's servers, running or not.
func (p *Pool) Servers() []*Server {
	if p == nil || p.svc == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.serverList()
}

// serverList lists the servers; call it with p.mu held.
func (p *Pool) serverList() []*Server {
	out := make([]*Server, 0, len(p.servers))
	for _, s := range p.servers {
		out = append(out, s)
	}
	return out
}

// Shutdown shuts every server down at once (each as Client.Shutdown does), so the whole
// takes as long as the slowest server, and waits for the pool's goroutines; ctx bounds it
// all (the servers' terminations go on: call Shutdown or Close again to wait for them). It
// is safe to call more than once and concurrently; later calls wait for the first one's
// result. The Service is not closed.
func (p *Pool) Shutdown(ctx context.Context) error {
	if p == nil || p.svc == nil {
		return invalidArg("shutdown", "", "not a Pool from NewPool")
	}
	if ctx == nil {
		return invalidArg("shutdown", "", "nil context")
	}
	p.shutOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		for _, s := range p.servers {
			s.startEnd() // no new start; back-off pauses end
		}
		servers := p.serverList()
		p.mu.Unlock()
		p.cancel()
		go func() {
			var errs []error
			for _, s := range servers {
				if err := s.waitEnd(context.Background()); err != nil {
					errs = append(errs, err)
				}
			}
			p.wg.Wait() // the supervisors, the janitor and the evictions under way
			p.shutErr = errors.Join(errs...)
			close(p.shutDone)
		}()
	})
	select {
	case <-p.shutDone:
		return p.shutErr
	case <-ctx.Done():
		return ctxError("shutdown", "pool", ctx.Err())
	}
}

// Close is Shutdown bounded by the longest a server may take to end: the largest
// ShutdownTimeout + ExitTimeout + 3 x Grace among the pool's servers, plus 5s.
func (p *Pool) Close() error {
	if p == nil || p.svc == nil {
		return invalidArg("close", "", "not a Pool from NewPool")
	}
	bound := time.Duration(0)
	for _, s := range p.Servers() {
		cfg, err := s.cfg.withDefaults(p.svc)
		if err == nil {
			bound = max(bound, cfg.ShutdownTimeout+cfg.ExitTimeout+3*cfg.Grace)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound+5*time.Second)
	defer cancel()
	return p.Shutdown(ctx)
}

// Server is one server of a Pool, across its restarts. Client returns the Client of the
// server process running now, waiting (bounded by ctx) while a start or a restart is under
// way; every request and document operation goes through that Client. After a crash its
// calls fail with a *ServerExitError (errors.Is ErrServerExited) and the Pool restarts the
// server with the documents the Client held (same versions, same texts): call Client again
// for the restarted one. A call is never retried on the next server on its own (the request
// may have taken effect).
type Server struct {
	p   *Pool
	key Key
	cfg Config

	ctx      context.Context // ends when the server is evicted or the pool shuts down
	cancel   context.CancelFunc
	supDone  chan struct{} // closed when the supervisor has returned
	lastUse  atomic.Int64  // UnixNano of the last Get or Client, or of the end of the last start
	starting atomic.Bool   // a start (spawn, initialize, documents re-opened) is under way
	endOnce  sync.Once
	endErr   error
	ended    chan struct{} // closed once the server is out of the pool and its processes are gone

	mu       sync.Mutex
	cur      *Client   // the running client; nil while starting
	all      []*Client // every client started, for Shutdown
	failed   error     // final: the server is given up
	changed  chan struct{}
	restarts int // made in all
}

// Key is the server's key.
func (s *Server) Key() Key { return s.key }

// Restarts counts the restarts made so far.
func (s *Server) Restarts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.restarts
}

// Err is nil while the server runs or restarts; once given up it is the *RestartLimitError
// or the start error, and ErrClosed after Shutdown.
func (s *Server) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

func (s *Server) clients() []*Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.all
}

func (s *Server) set(c *Client, failed error) {
	s.mu.Lock()
	s.cur = c
	if c != nil {
		s.all = append(s.all, c)
	}
	if failed != nil && s.failed == nil {
		s.failed = failed
	}
	close(s.changed)
	s.changed = make(chan struct{})
	s.mu.Unlock()
}

// Client returns the running client, waiting for a start or restart under way. The client
// may crash at any time after: its calls then fail with a *ServerExitError and the Server
// restarts it; call Client again for the next one.
func (s *Server) Client(ctx context.Context) (*Client, error) {
	if s == nil || s.p == nil {
		return nil, invalidArg("client", "", "not a Server from Pool.Get")
	}
	if ctx == nil {
		return nil, invalidArg("client", "", "nil context")
	}
	s.touch()
	for {
		s.mu.Lock()
		c, failed, changed := s.cur, s.failed, s.changed
		s.mu.Unlock()
		if failed != nil {
			return nil, failed
		}
		if c != nil {
			select {
			case <-c.Done(): // crashed: wait for the supervisor to say what next
			default:
				return c, nil
			}
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, ctxError("wait for server", s.key.String(), ctx.Err())
		}
	}
}

// supervise starts the server, waits for it to end, and restarts it after a crash, with
// back-off, until the restart limit or the pool's Shutdown.
func (s *Server) supervise() {
	p := s.p
	defer p.wg.Done()
	defer close(s.supDone)
	var docs []Document    // to re-open on the next server
	var starts []time.Time // within the window
	for {
		starts = append(starts, time.Now())
		s.starting.Store(true)
		c, err := s.start(docs)
		s.touch() // before starting is cleared: the janitor never sees a started server as idle since before its start
		s.starting.Store(false)
		if err == nil {
			s.set(c, nil)
			select {
			case <-c.Done():
			case <-s.ctx.Done():
				s.set(nil, newError("server", s.key.String(), ErrClosed, nil))
				return
			}
			if errors.Is(c.Err(), ErrClosed) { // shut down by a caller, not a crash
				s.set(nil, &Error{Op: "server", Name: s.key.String(), Kind: ErrClosed, Hint: "its client was shut down"})
				return
			}
			docs = c.Documents()
			err = c.Err()
			p.log.Warn("lsp: pool: server crashed", "server", s.key.String(), "err", err)
		}
		if s.ctx.Err() != nil {
			s.set(nil, newError("server", s.key.String(), ErrClosed, nil))
			return
		}
		if !retryable(err) {
			s.set(nil, err)
			return
		}
		// The restarts made within the window (the first start is none).
		now := time.Now()
		kept := starts[:0]
		for _, t := range starts {
			if now.Sub(t) < p.cfg.RestartWindow {
				kept = append(kept, t)
			}
		}
		starts = kept
		made := len(starts) - 1
		if p.cfg.MaxRestarts < 0 || made >= p.cfg.MaxRestarts {
			var stderr []byte
			var exit *ServerExitError
			if errors.As(err, &exit) {
				stderr = exit.Stderr
			}
			s.set(nil, &RestartLimitError{Key: s.key, Restarts: max(made, 0), Window: p.cfg.RestartWindow, Last: err, Stderr: stderr})
			p.log.Error("lsp: pool: giving up on a server", "server", s.key.String(), "restarts", made, "err", err)
			return
		}
		s.set(nil, nil)
		pause := backoff.Policy{First: p.cfg.Backoff, Max: p.cfg.MaxBackoff}.Nth(made)
		if backoff.Sleep(s.ctx, pause) != nil {
			s.set(nil, newError("server", s.key.String(), ErrClosed, nil))
			return
		}
		s.mu.Lock()
		s.restarts++
		s.mu.Unlock()
		p.log.Info("lsp: pool: restarting a server", "server", s.key.String(), "restart", made+1, "documents", len(docs))
	}
}

// retryable says whether a failed start may succeed if tried again: the server crashed or
// hung, as opposed to a bad Config or a missing program.
func retryable(err error) bool {
	switch {
	case errors.Is(err, subprocess.ErrInvalid), errors.Is(err, subprocess.ErrNotFound),
		errors.Is(err, subprocess.ErrPermission), errors.Is(err, subprocess.ErrClosed),
		errors.Is(err, subprocess.ErrUnsupported):
		return false
	}
	return true
}

// start starts a client and re-opens docs on it, with their versions and texts.
func (s *Server) start(docs []Document) (*Client, error) {
	ctx, cancel := context.WithTimeout(s.ctx, s.p.cfg.StartTimeout)
	defer cancel()
	c, err := Start(ctx, s.p.svc, s.cfg)
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		if _, err := c.open(ctx, TextDocumentItem{URI: d.URI, LanguageID: d.LanguageID, Version: d.Version, Text: d.Text}); err != nil {
			// The new server died already, or hung: end it and count it as a crash.
			if cerr := c.Close(); cerr != nil {
				err = errors.Join(err, cerr)
			}
			s.mu.Lock()
			s.all = append(s.all, c)
			s.mu.Unlock()
			return nil, &Error{Op: "re-open", Name: d.URI, Err: err, Hint: "the restarted server failed at once"}
		}
	}
	return c, nil
}
