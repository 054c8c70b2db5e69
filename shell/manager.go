package shell

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/subkit/subkit/subprocess"
)

// Defaults of ManagerConfig.
const (
	DefaultMaxSessions   = 64
	DefaultProtectRecent = 8
)

// ManagerConfig configures a Manager. The zero value is ready to use.
type ManagerConfig struct {
	// Session configures every session. Its Service, when set, is the caller's and is shared
	// by all sessions (the Manager never closes it); nil means the Manager makes one Service
	// from Session.ServiceConfig, shared by its sessions and closed by Manager.Close.
	Session Config
	// MaxSessions caps the sessions open at once; default DefaultMaxSessions (64). Opening
	// one more prunes one: never one of the ProtectRecent most recently used, an exited one
	// first, else the least recently used.
	MaxSessions int
	// ProtectRecent is how many of the most recently used sessions pruning never takes;
	// default DefaultProtectRecent (8). It must be below MaxSessions.
	ProtectRecent int
	// NewID makes the id of each new session; it must not give one twice. nil means counters:
	// "1", "2", ... A Manager whose ids reach callers that must not guess each other's (the
	// clients of a server) gives random ones.
	NewID func() string
}

// Manager keeps shell sessions by id ("1", "2", ..., or ManagerConfig.NewID's), for a tool
// that hands ids to a model.
// It is safe for concurrent use.
type Manager struct {
	cfg    ManagerConfig
	svc    *subprocess.Service
	ownSvc bool
	clock  atomic.Uint64

	mu       sync.Mutex
	sessions map[string]*Session
	opening  int
	next     int
	closed   bool
	closing  sync.WaitGroup // Open calls in progress

	closeOnce sync.Once
	closeErr  error
}

// NewManager validates cfg and makes the Manager (and its Service, unless cfg.Session has one).
func NewManager(cfg ManagerConfig) (*Manager, error) {
	if err := cfg.Session.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxSessions < 0 || cfg.ProtectRecent < 0 {
		return nil, &ConfigError{Field: "MaxSessions/ProtectRecent", Err: errors.New("negative; use 0 for the default")}
	}
	if cfg.MaxSessions == 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.ProtectRecent == 0 {
		cfg.ProtectRecent = min(DefaultProtectRecent, cfg.MaxSessions-1)
	}
	if cfg.ProtectRecent >= cfg.MaxSessions {
		return nil, &ConfigError{Field: "ProtectRecent", Err: fmt.Errorf("%d is not below MaxSessions %d: nothing could be pruned",
			cfg.ProtectRecent, cfg.MaxSessions)}
	}
	m := &Manager{cfg: cfg, svc: cfg.Session.Service, sessions: map[string]*Session{}}
	if m.svc == nil {
		svc, err := cfg.Session.ownService()
		if err != nil {
			return nil, &Error{Op: "new manager", Err: err}
		}
		m.svc, m.ownSvc = svc, true
	}
	m.cfg.Session.Service = m.svc
	m.cfg.Session.ServiceConfig = subprocess.Config{}
	return m, nil
}

// Open starts a new session (see Open) with the next id. At MaxSessions it first prunes one
// (closing it); the pruned session's id is gone from then on.
func (m *Manager) Open(ctx context.Context) (*Session, error) {
	const op = "open"
	if m == nil || m.sessions == nil {
		return nil, invalid(op, "the Manager was not made by NewManager")
	}
	if ctx == nil {
		return nil, invalid(op, "nil context")
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, &Error{Op: op, Kind: ErrClosed, Hint: "the Manager was closed"}
	}
	var victim *Session
	if len(m.sessions)+m.opening >= m.cfg.MaxSessions {
		victim = m.pruneLocked()
		if victim == nil {
			m.mu.Unlock()
			return nil, &Error{Op: op, Kind: subprocess.ErrLimit,
				Err:  fmt.Errorf("%d sessions are open or opening", m.cfg.MaxSessions),
				Hint: "close one, or wait for the sessions being opened"}
		}
		delete(m.sessions, victim.id)
	}
	m.next++
	id := strconv.Itoa(m.next)
	if m.cfg.NewID != nil {
		id = m.cfg.NewID()
	}
	m.opening++
	m.closing.Add(1)
	m.mu.Unlock()
	defer m.closing.Done()

	var errs []error
	if victim != nil {
		if err := victim.Close(); err != nil {
			errs = append(errs, fmt.Errorf("prune session %s: %w", victim.id, err))
		}
	}
	s, err := open(ctx, m.cfg.Session, id, &m.clock)
	m.mu.Lock()
	m.opening--
	if err == nil {
		if m.closed {
			err = &Error{Op: op, ID: id, Kind: ErrClosed, Hint: "the Manager was closed while the session opened"}
		} else {
			m.sessions[id] = s
		}
	}
	m.mu.Unlock()
	if err != nil {
		if s != nil {
			errs = append(errs, s.Close())
		}
		return nil, errors.Join(append([]error{err}, errs...)...)
	}
	for _, e := range errs {
		s.log.Warn("prune", "err", e)
	}
	return s, nil
}

// pruneLocked picks the session to prune: outside the ProtectRecent most recently used, an
// exited one first, each group least recently used first. Called with mu held.
func (m *Manager) pruneLocked() *Session {
	all := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		all = append(all, s)
	}
	slices.SortFunc(all, func(a, b *Session) int { // most recently used first
		ua, ub := a.used.Load(), b.used.Load()
		switch {
		case ua > ub:
			return -1
		case ua < ub:
			return 1
		}
		return 0
	})
	if len(all) <= m.cfg.ProtectRecent {
		return nil
	}
	candidates := all[m.cfg.ProtectRecent:]
	for i := len(candidates) - 1; i >= 0; i-- {
		if isDone(candidates[i].term.Done()) {
			return candidates[i]
		}
	}
	return candidates[len(candidates)-1]
}

// Get returns the session with this id; ErrNotFound when there is none (never opened,
// closed or pruned).
func (m *Manager) Get(id string) (*Session, error) {
	if m == nil || m.sessions == nil {
		return nil, invalid("get", "the Manager was not made by NewManager")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil, &Error{Op: "get", ID: id, Kind: ErrClosed}
	}
	s, ok := m.sessions[id]
	if !ok {
		return nil, &Error{Op: "get", ID: id, Kind: ErrNotFound,
			Hint: "no such session: it was never opened, or was closed or pruned; open a new one"}
	}
	return s, nil
}

// List describes every open session, in id order.
func (m *Manager) List() []Info {
	if m == nil || m.sessions == nil {
		return nil
	}
	m.mu.Lock()
	all := make([]*Session, 0, len(m.sessions))
	for _, s := range m.sessions {
		all = append(all, s)
	}
	m.mu.Unlock()
	slices.SortFunc(all, func(a, b *Session) int {
		x, _ := strconv.Atoi(a.id)
		y, _ := strconv.Atoi(b.id)
		return x - y
	})
	out := make([]Info, len(all))
	for i, s := range all {
		out[i] = s.Info()
	}
	return out
}

// CloseSession closes the session with this id and forgets it.
func (m *Manager) CloseSession(id string) error {
	if m == nil || m.sessions == nil {
		return invalid("close", "the Manager was not made by NewManager")
	}
	m.mu.Lock()
	s, ok := m.sessions[id]
	delete(m.sessions, id)
	m.mu.Unlock()
	if !ok {
		return &Error{Op: "close", ID: id, Kind: ErrNotFound}
	}
	return s.Close()
}

// Close closes every session, then the Manager's Service if it made it. It is safe to call
// more than once; later calls return the first one's error.
func (m *Manager) Close() error {
	if m == nil || m.sessions == nil {
		return invalid("close", "the Manager was not made by NewManager")
	}
	m.closeOnce.Do(func() {
		m.mu.Lock()
		m.closed = true
		all := make([]*Session, 0, len(m.sessions))
		for _, s := range m.sessions {
			all = append(all, s)
		}
		clear(m.sessions)
		m.mu.Unlock()
		var errs []error
		var wg sync.WaitGroup
		results := make([]error, len(all))
		for i, s := range all {
			wg.Add(1)
			go func() {
				defer wg.Done()
				results[i] = s.Close()
			}()
		}
		wg.Wait()
		m.closing.Wait()
		errs = append(errs, results...)
		if m.ownSvc {
			errs = append(errs, m.svc.Close())
		}
		if err := errors.Join(errs...); err != nil {
			m.closeErr = &Error{Op: "close", Err: err}
		}
	})
	return m.closeErr
}
