package shell

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/subkit/subkit/internal/done"
	"github.com/subkit/subkit/internal/registry"
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
	reg    *registry.Registry[*Session]

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
	m := &Manager{cfg: cfg, svc: cfg.Session.Service}
	if m.svc == nil {
		svc, err := cfg.Session.ownService()
		if err != nil {
			return nil, &Error{Op: "new manager", Err: err}
		}
		m.svc, m.ownSvc = svc, true
	}
	m.cfg.Session.Service = m.svc
	m.cfg.Session.ServiceConfig = subprocess.Config{}
	m.reg = registry.New(registry.Config[*Session]{NewID: cfg.NewID, Max: cfg.MaxSessions, ProtectRecent: cfg.ProtectRecent,
		EvictLive: true, Ended: func(s *Session) bool { return done.Closed(s.term.Done()) }, LastUse: func(s *Session) uint64 { return s.used.Load() }})
	return m, nil
}

// Open starts a new session (see Open) with the next id. At MaxSessions it first prunes one
// (closing it); the pruned session's id is gone from then on.
func (m *Manager) Open(ctx context.Context) (*Session, error) {
	const op = "open"
	if m == nil || m.reg == nil {
		return nil, invalid(op, "the Manager was not made by NewManager")
	}
	if ctx == nil {
		return nil, invalid(op, "nil context")
	}
	slot, pruneErr, err := m.reg.Reserve()
	switch {
	case errors.Is(err, registry.ErrClosed):
		return nil, &Error{Op: op, Kind: ErrClosed, Hint: "the Manager was closed"}
	case errors.Is(err, registry.ErrFull):
		return nil, &Error{Op: op, Kind: subprocess.ErrLimit,
			Err:  fmt.Errorf("%d sessions are open or opening", m.cfg.MaxSessions),
			Hint: "close one, or wait for the sessions being opened"}
	case err != nil:
		return nil, &Error{Op: op, Err: err}
	}
	defer slot.Cancel() // the slot is freed even if open panics; a no-op after Fill
	s, err := open(ctx, m.cfg.Session, slot.ID(), &m.clock)
	if err != nil {
		return nil, errors.Join(err, pruneErr)
	}
	if err := slot.Fill(s); err != nil { // closed before the deferred Cancel lets Manager.Close go on
		return nil, errors.Join(&Error{Op: op, ID: slot.ID(), Kind: ErrClosed, Hint: "the Manager was closed while the session opened"},
			s.Close(), pruneErr)
	}
	if pruneErr != nil {
		s.log.Warn("prune", "err", pruneErr)
	}
	return s, nil
}

// Get returns the session with this id; ErrNotFound when there is none (never opened,
// closed or pruned).
func (m *Manager) Get(id string) (*Session, error) {
	if m == nil || m.reg == nil {
		return nil, invalid("get", "the Manager was not made by NewManager")
	}
	s, ok := m.reg.Get(id)
	if !ok {
		if m.reg.Closed() {
			return nil, &Error{Op: "get", ID: id, Kind: ErrClosed}
		}
		return nil, &Error{Op: "get", ID: id, Kind: ErrNotFound,
			Hint: "no such session: it was never opened, or was closed or pruned; open a new one"}
	}
	return s, nil
}

// List describes every open session, in the order they were opened.
func (m *Manager) List() []Info {
	if m == nil || m.reg == nil {
		return nil
	}
	all := m.reg.List()
	out := make([]Info, len(all))
	for i, e := range all {
		out[i] = e.Value.Info()
	}
	return out
}

// CloseSession closes the session with this id and forgets it.
func (m *Manager) CloseSession(id string) error {
	if m == nil || m.reg == nil {
		return invalid("close", "the Manager was not made by NewManager")
	}
	s, ok := m.reg.Remove(id)
	if !ok {
		return &Error{Op: "close", ID: id, Kind: ErrNotFound}
	}
	return s.Close()
}

// Close closes every session, then the Manager's Service if it made it. It is safe to call
// more than once; later calls return the first one's error.
func (m *Manager) Close() error {
	if m == nil || m.reg == nil {
		return invalid("close", "the Manager was not made by NewManager")
	}
	m.closeOnce.Do(func() {
		errs := []error{m.reg.Close()}
		if m.ownSvc {
			errs = append(errs, m.svc.Close())
		}
		if err := errors.Join(errs...); err != nil {
			m.closeErr = &Error{Op: "close", Err: err}
		}
	})
	return m.closeErr
}
