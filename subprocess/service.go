package subprocess

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/subkit/subkit/internal/ending"
	"github.com/subkit/subkit/sandbox"
)

// DefaultManagedPrefix is the prefix of variables that belong to the harness running subkit.
// They are removed from the inherited environment so a stale identity of an outer harness
// never leaks into a child implicitly; a Spec may still set them explicitly.
const DefaultManagedPrefix = "DSH_"

// Config configures a Service. The zero value is ready to use.
type Config struct {
	// Env is the base environment before scrubbing; nil means os.Environ(). The scrub drops
	// credential-like variables: a name containing KEY, SECRET, TOKEN, PASS, PWD, CREDENTIAL,
	// AUTH, COOKIE, SESSION or DSN in any case (but PWD and OLDPWD themselves, and the AUTHOR
	// part of GIT_AUTHOR_NAME, say nothing secret), so SSH_AUTH_SOCK too, or a value holding a
	// URL with a password (scheme://user:password@host: proxies, database URLs); and every name
	// carrying the managed prefix.
	Env []string
	// ManagedPrefix names the harness-managed variables to drop from Env; empty means
	// DefaultManagedPrefix.
	ManagedPrefix string
	// AllowEnv lists names kept even though they look like credentials (by name or by value)
	// or carry the managed prefix (false positives such as KEYBOARD_LAYOUT or XDG_SESSION_TYPE).
	AllowEnv []string
	// TempDir is where the private runtime root is created; empty means os.TempDir().
	TempDir string
	// SpillDir is where the Service's private (0700) spill directory is created, lazily, the
	// first time a stream needs a spill file; empty means os.TempDir(). Spill files outlive the
	// Service: their owner removes them.
	SpillDir string
	// MaxLive, when > 0, bounds the trees live at once (terminals included): a tree is
	// live from Spawn until nothing of it is left, its daemons and their output included.
	// Spawn beyond it fails at once with ErrLimit; it never queues. 0 means no limit.
	MaxLive int
	// Logger receives diagnostics (spill failures, cleanup trouble); nil means none.
	Logger *slog.Logger
	// KillOnHostExit makes each leader receive SIGKILL if this process dies without closing
	// the Service (Linux: a parent-death signal, set from one OS thread that lives as long as
	// the Service, since the signal fires when the creating thread exits). It reaches the
	// leader only: group members that outlive it are ended by Terminate and Close, not by the
	// host's death. On Windows every tree already dies with the host (job objects), and
	// KillOnHostExit changes nothing. On other systems New fails with ErrUnsupported.
	KillOnHostExit bool
	// Guard runs one helper process per Service, started by New, that spawns every tree, is
	// their child subreaper (processes that leave a tree by double fork or setsid are
	// re-parented to it, whatever their environment says), and ends every tree and every
	// process it adopted when this process dies without Close, even by SIGKILL. The guard is
	// invisible in the API: pids, members and results are the programs'. A guard that dies
	// is noticed at once: its trees are ended, and the next Spawn starts a new guard. Linux
	// only; elsewhere New fails with ErrUnsupported (Windows needs none: job objects end with
	// the host). It needs a helper executable: Config.Helper, or this binary when it calls
	// HelperMain; without one New fails with ErrInvalid and says how to enable it.
	Guard bool
	// Helper is the path of the kit's helper executable (any binary that calls HelperMain
	// first thing, such as the subkit CLI); empty means this binary, when it has called
	// HelperMain.
	Helper string
	// Sandbox, when set, confines every tree the Service spawns (Spec.Sandbox overrides it
	// per tree): New probes which backend works here (see the sandbox package) and fails
	// with ErrUnsupported, saying what is missing, when none can enforce confinement; a spawn
	// never runs unconfined when confinement was asked for.
	// It needs the kit's helper executable, as Guard does: the helper confines itself and
	// then execs the program, which keeps the pid. Result.Sandbox says how each tree was
	// confined.
	Sandbox *sandbox.Policy
}

// Service spawns and owns process trees. It is safe for concurrent use.
type Service struct {
	cwd    string
	root   string
	env    []string
	rules  envRules
	paths  pathRules
	spill  spillPlace
	places map[string]*spillPlace // Spec.SpillDir's, guarded by mu

	sandboxPolicy *sandbox.Policy // Config.Sandbox
	sandboxes     sandboxes
	helper        string // Config.Helper: see helperPath

	hurry    context.Context // ended by Hurry: the graces of every Terminate and Close end with it
	hurryNow context.CancelFunc
	// after starts the timer of a Spec.Timeout: its channel and its stop; nil means
	// time.NewTimer. Tests fire it on an event instead of a clock.
	after   func(d time.Duration) (<-chan time.Time, func() bool)
	maxLive int
	log     *slog.Logger
	backend backend

	guardWatch sync.WaitGroup // the goroutine that ends the trees of a guard that died
	stopWatch  chan struct{}  // closed when Close begins

	mu       sync.Mutex
	closed   bool
	pending  int            // spawns admitted and not yet registered
	inflight sync.WaitGroup // spawns between the closed check and registration
	live     map[*Handle]struct{}
	closeErr error
	closing  chan struct{} // closed when Close has finished
}

// New creates a Service: it records the host cwd, scrubs the environment and creates the
// private runtime root.
func New(cfg Config) (*Service, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cwd, err := os.Getwd()
	if err != nil {
		return nil, &Error{Op: "new service", Err: err, Hint: "the host's working directory is gone"}
	}
	env := cfg.Env
	if env == nil {
		env = os.Environ()
	}
	prefix := cfg.ManagedPrefix
	if prefix == "" {
		prefix = DefaultManagedPrefix
	}
	be, err := newBackend(cfg)
	if err != nil {
		return nil, err
	}
	spill := cfg.SpillDir
	if spill == "" {
		spill = os.TempDir()
	}
	tmp := cfg.TempDir
	if tmp == "" {
		tmp = os.TempDir()
	}
	root, err := os.MkdirTemp(tmp, "subkit-runtime-")
	if err != nil {
		be.close(context.Background())
		return nil, &Error{Op: "new service", Name: tmp, Kind: pathKind(err), Err: err, Hint: "set Config.TempDir to an existing, writable directory"}
	}
	if err := be.setRoot(root); err != nil {
		be.close(context.Background())
		os.RemoveAll(root)
		return nil, &Error{Op: "new service", Err: err}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Service{
		cwd: cwd, root: root, env: scrubEnv(env, prefix, cfg.AllowEnv, be.envRules()),
		rules: be.envRules(), paths: be.pathRules(), spill: spillPlace{parent: spill}, maxLive: cfg.MaxLive,
		log: log, backend: be,
		live: make(map[*Handle]struct{}), closing: make(chan struct{}), stopWatch: make(chan struct{}),
	}
	s.hurry, s.hurryNow = context.WithCancel(context.Background())
	s.sandboxPolicy = cfg.Sandbox
	s.helper = cfg.Helper
	if cfg.Sandbox != nil {
		if _, err := s.sandboxes.get(s.helper); err != nil { // fail now, not at the first Spawn
			s.Close()
			return nil, sandboxError("new service", "Config.Sandbox", err)
		}
	}
	if lost, _, _ := be.guardState(); lost != nil {
		s.guardWatch.Go(s.watchGuard)
	}
	return s, nil
}

// Hurry cuts short the grace of every Terminate and Close of the Service's trees, in progress
// or to come: what SIGTERM has not ended gets SIGKILL at once. A CLI calls it on a second
// Ctrl-C. It cannot be undone.
func (s *Service) Hurry() {
	if s.valid("hurry") != nil {
		return
	}
	s.hurryNow()
}

// timer starts the timer of a Spec.Timeout of d.
func (s *Service) timer(d time.Duration) (<-chan time.Time, func() bool) {
	if s.after != nil {
		return s.after(d)
	}
	t := time.NewTimer(d)
	return t.C, t.Stop
}

// ending is how the Service ends a tree whose spec gives grace: Hurry ends the grace, and
// a tree still present ending.KillWait after SIGKILL has a member the kernel cannot kill now
// (uninterruptible sleep), which Terminate reports.
func (s *Service) ending(grace time.Duration) ending.Policy {
	return ending.Policy{Grace: grace, Hurry: s.hurry}
}

// watchGuard ends the trees of a guard that died: their leaders are no longer held, and
// nothing would end them at the host's death. The next Spawn starts a new guard.
func (s *Service) watchGuard() {
	for {
		lost, next, endAdopted := s.backend.guardState()
		if lost == nil {
			return
		}
		select {
		case <-lost:
		case <-s.stopWatch:
			return
		}
		s.log.Warn("the guard died; ending its trees")
		s.mu.Lock()
		hs := make([]*Handle, 0, len(s.live))
		for h := range s.live {
			hs = append(hs, h)
		}
		s.mu.Unlock()
		var wg sync.WaitGroup
		for _, h := range hs {
			wg.Go(func() {
				if err := h.end(context.Background(), true); err != nil {
					s.log.Warn("a tree of the dead guard not ended", "pid", h.Pid(), "err", err)
				}
			})
		}
		wg.Go(func() {
			if err := endAdopted(context.Background()); err != nil {
				s.log.Warn("a process the dead guard had adopted not ended", "err", err)
			}
		})
		wg.Wait()
		select { // wait for a new guard (a Spawn starts one) or Close
		case <-s.stopWatch:
			return
		case <-next:
		}
	}
}

func (c *Config) check() error {
	if c.MaxLive < 0 {
		return invalid("new service", "MaxLive", fmt.Sprintf("%d is negative; use 0 for no limit", c.MaxLive))
	}
	if c.Env != nil {
		if err := checkEnv(c.Env); err != nil {
			var e *Error
			if errors.As(err, &e) {
				e.Op, e.Name = "new service", "Config.Env"
			}
			return err
		}
	}
	return nil
}

// pathKind is the kind of a failure to use a configured directory.
func pathKind(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ErrNotFound
	case errors.Is(err, fs.ErrPermission):
		return ErrPermission
	}
	return ErrInvalid
}

// valid reports whether s was made by New; otherwise it returns the error for op.
func (s *Service) valid(op string) error {
	if s == nil || s.live == nil {
		return &Error{Op: op, Kind: ErrInvalid, Err: errors.New("the Service was not created by New"),
			Hint: "create it with subprocess.New"}
	}
	return nil
}

// Err returns nil while the Service is open: an error wrapping ErrClosed once Close or
// Shutdown has begun, and one wrapping ErrInvalid for a Service not made by New. An adapter
// given a caller's Service asks it before anything else, so that a closed one is reported as
// closed rather than by what fails later.
func (s *Service) Err() error {
	if err := s.valid("check"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return &Error{Op: "check", Kind: ErrClosed, Hint: "the Service was closed; make a new one with subprocess.New"}
	}
	return nil
}

// Cwd is the host's working directory when the Service was created; the default Dir of a Spec.
func (s *Service) Cwd() string {
	if s.valid("cwd") != nil {
		return ""
	}
	return s.cwd
}

// RuntimeRoot is an owner-private (0700) directory that lives as long as the Service; Close
// deletes it.
func (s *Service) RuntimeRoot() string {
	if s.valid("runtime root") != nil {
		return ""
	}
	return s.root
}

// Env returns a copy of the scrubbed base environment every child starts from.
func (s *Service) Env() []string {
	if s.valid("env") != nil {
		return nil
	}
	return append([]string(nil), s.env...)
}

// ResolveExecutable finds name the way Spawn does with no Spec.Env: an absolute file, a path
// relative to Cwd when name holds a separator, or a search of the scrubbed PATH (with PATHEXT
// extensions on Windows). Relative PATH entries are skipped: the current directory is never
// searched implicitly. The error names the PATH searched.
func (s *Service) ResolveExecutable(name string) (string, error) {
	if err := s.valid("resolve"); err != nil {
		return "", err
	}
	return s.resolve(name, s.env, s.cwd)
}

// resolve finds name with env's PATH; a relative path with a separator is taken against dir.
func (s *Service) resolve(name string, env []string, dir string) (string, error) {
	path, _ := lookupEnv(env, "PATH", s.rules)
	r := s.paths
	if r.exts != nil {
		ext, _ := lookupEnv(env, "PATHEXT", s.rules)
		r.exts = parsePathExt(ext)
	}
	return resolveExecutable(name, dir, path, r)
}

// register adds o to the live set, where it stays until forget: until nothing of the tree
// and its output is left.
func (s *Service) register(o *Handle) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.live[o] = struct{}{}
}

// forget takes o out of the live set: nothing of it is left.
func (s *Service) forget(o *Handle) {
	s.mu.Lock()
	delete(s.live, o)
	s.mu.Unlock()
}

// Close terminates every live tree (SIGTERM, grace, SIGKILL), waits for each, deletes the
// runtime root, and then reports every failure joined. It is safe to call more than once; later
// calls wait for the first and return its error. Spawn after Close fails with ErrClosed.
func (s *Service) Close() error {
	if err := s.valid("close"); err != nil {
		return err
	}
	return s.Shutdown(context.Background())
}

// Shutdown is Close bounded by ctx: when ctx ends first, the trees not yet gone are reported
// and the runtime root is still deleted.
func (s *Service) Shutdown(ctx context.Context) error {
	if err := s.valid("close"); err != nil {
		return err
	}
	if err := checkCtx("close", "", ctx); err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		select {
		case <-s.closing:
			return s.closeErr
		case <-ctx.Done():
			return &Error{Op: "close", Err: ctx.Err()}
		}
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stopWatch)
	s.guardWatch.Wait()
	s.inflight.Wait()

	s.mu.Lock()
	hs := make([]*Handle, 0, len(s.live))
	for h := range s.live {
		hs = append(hs, h)
	}
	s.mu.Unlock()

	errs := make([]error, len(hs))
	var wg sync.WaitGroup
	for i, h := range hs {
		wg.Go(func() {
			// No sweep per tree: one sweep of the Service's cookie follows for all of them.
			h.cancelRequested()
			if err := h.end(ctx, false); err != nil {
				errs[i] = fmt.Errorf("pid %d: %w", h.Pid(), err)
				return
			}
			select {
			case <-h.endedCh:
			case <-ctx.Done():
				errs[i] = fmt.Errorf("pid %d: not ended: %w", h.Pid(), ctx.Err())
			}
		})
	}
	wg.Wait()
	// Processes that left their trees but carry the Service's cookie.
	if err := s.backend.sweep(ctx); err != nil {
		errs = append(errs, fmt.Errorf("escaped processes: %w", err))
	}
	if err := s.backend.close(ctx); err != nil {
		errs = append(errs, err)
	}
	// The root goes first, whatever happened to the processes.
	var rootErr error
	if err := os.RemoveAll(s.root); err != nil {
		rootErr = &Error{Op: "close", Name: s.root, Err: err, Hint: "remove the runtime root by hand"}
	}
	if err := errors.Join(errs...); err != nil {
		errs = []error{&Error{Op: "close", Err: err}}
	} else {
		errs = nil
	}
	s.closeErr = errors.Join(append(errs, rootErr)...)
	close(s.closing)
	return s.closeErr
}
