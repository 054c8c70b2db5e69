package coderuntime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/subkit/subkit/subprocess"
)

// Config configures a Runtime. The zero value is ready to use: python3, node and bash from
// the host's PATH, a DefaultTimeout, the Service's default tail (subprocess.DefaultTailBytes)
// per stream, no spill file, and a Service of the runtime's own.
type Config struct {
	// Service runs every run and session of the runtime. A Service given here belongs to the
	// caller: the runtime never closes it (Close ends the runtime's own runs and sessions, and
	// nothing else of it), and its configuration (environment scrub, guard, limits) applies as
	// it is. Nil means the runtime makes a Service of its own from ServiceConfig and closes it
	// with the runtime.
	Service *subprocess.Service
	// ServiceConfig configures the Service the runtime makes when Service is nil: the base
	// environment (nil: the host's) and its credential scrub, the temp dir under which the
	// private runtime root is made, the spill dir, the logger. It must be zero when Service is
	// set.
	ServiceConfig subprocess.Config
	// Logger receives diagnostics (unreadable error reports, cleanup trouble); nil means
	// ServiceConfig.Logger, or none.
	Logger *slog.Logger
	// Languages are the languages offered; nil means python3, node and bash.
	Languages []Language
	// Interpreters overrides the program per language: a name searched in the Service's
	// scrubbed PATH, or an absolute path. Missing entries take "python3", "node", "bash".
	Interpreters map[Language]string
	// Timeout is a Request's (and a session cell's) default timeout; 0 means DefaultTimeout.
	Timeout time.Duration
	// Grace is a Request's (and a session's) default grace; 0 means subprocess.DefaultGrace.
	Grace time.Duration
	// DrainGrace is a Request's default drain grace; 0 means 250ms.
	DrainGrace time.Duration
	// StdoutBytes and StderrBytes are a Request's (and a session's) default tail budgets; 0
	// means subprocess.DefaultTailBytes.
	StdoutBytes, StderrBytes int
	// SpillBytes is a Request's default spill cap; 0 means no spill file.
	SpillBytes int64
}

// Runtime runs model-written code in local interpreters through a subprocess.Service: each
// run is its own process tree, in its own private directory, with a scrubbed environment, the
// null device (or the Request's bytes) as stdin, and bounded output; sessions keep one
// interpreter from cell to cell. It is safe for concurrent use. It passes the contract suites
// of package runtimetest.
type Runtime struct {
	svc          *subprocess.Service
	ownsSvc      bool
	langs        []Language
	interpreters map[Language]string
	timeout      time.Duration
	grace        time.Duration
	drain        time.Duration
	stdoutBytes  int
	stderrBytes  int
	spillBytes   int64
	log          *slog.Logger

	mu       sync.Mutex
	closed   bool
	runs     sync.WaitGroup // runs between the closed check and their return
	handles  map[*subprocess.Handle]struct{}
	sessions map[*procSession]struct{}
}

// New checks cfg and creates the runtime and, unless cfg.Service is given, its own Service (and
// so its private runtime root). Errors wrap ErrInvalid or ErrUnsupportedLanguage (a
// *RequestError naming the Config field), or the Service's creation failure.
func New(cfg Config) (*Runtime, error) {
	r := &Runtime{
		interpreters: map[Language]string{},
		timeout:      cmp.Or(cfg.Timeout, DefaultTimeout),
		grace:        cmp.Or(cfg.Grace, subprocess.DefaultGrace),
		drain:        cmp.Or(cfg.DrainGrace, drainGrace),
		stdoutBytes:  cmp.Or(cfg.StdoutBytes, subprocess.DefaultTailBytes),
		stderrBytes:  cmp.Or(cfg.StderrBytes, subprocess.DefaultTailBytes),
		spillBytes:   cfg.SpillBytes,
		log:          cmp.Or(cfg.Logger, cfg.ServiceConfig.Logger),
		handles:      map[*subprocess.Handle]struct{}{},
		sessions:     map[*procSession]struct{}{},
	}
	switch {
	case cfg.Timeout < 0:
		return nil, invalid("Config.Timeout", fmt.Sprintf("%v is negative; use 0 for the default", cfg.Timeout))
	case cfg.Grace < 0:
		return nil, invalid("Config.Grace", fmt.Sprintf("%v is negative; use 0 for the default", cfg.Grace))
	case cfg.DrainGrace < 0:
		return nil, invalid("Config.DrainGrace", fmt.Sprintf("%v is negative; use 0 for the default", cfg.DrainGrace))
	case cfg.StdoutBytes < 0 || cfg.StderrBytes < 0:
		return nil, invalid("Config.StdoutBytes", "output budgets must not be negative; use 0 for the default")
	case cfg.StdoutBytes > subprocess.MaxTailBytes || cfg.StderrBytes > subprocess.MaxTailBytes:
		return nil, invalid("Config.StdoutBytes", fmt.Sprintf("output budgets are at most subprocess.MaxTailBytes (%d); keep whole streams with SpillBytes", subprocess.MaxTailBytes))
	case cfg.SpillBytes < 0:
		return nil, invalid("Config.SpillBytes", "must not be negative; use 0 for no spill file")
	case cfg.Service != nil && !reflect.ValueOf(cfg.ServiceConfig).IsZero():
		return nil, invalid("Config.ServiceConfig", "must be zero when Config.Service is given: the caller's Service is used as it is")
	}
	langs := cfg.Languages
	if langs == nil {
		langs = knownLanguages()
	}
	for _, l := range langs {
		if _, ok := lookupLanguage(l); !ok {
			return nil, unsupported("Config.Languages", l)
		}
		if !slices.Contains(r.langs, l) {
			r.langs = append(r.langs, l)
		}
	}
	for l, name := range cfg.Interpreters {
		if _, ok := lookupLanguage(l); !ok {
			return nil, unsupported("Config.Interpreters", l)
		}
		if name != "" {
			r.interpreters[l] = name
		}
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if cfg.Service != nil {
		if cfg.Service.RuntimeRoot() == "" { // not made by subprocess.New
			return nil, invalid("Config.Service", "not a Service subprocess.New returned")
		}
		r.svc = cfg.Service
		return r, nil
	}
	svc, err := subprocess.New(cfg.ServiceConfig)
	if err != nil {
		return nil, &Error{Op: "new", Err: err}
	}
	r.svc, r.ownsSvc = svc, true
	return r, nil
}

func unsupported(field string, l Language) error {
	return &RequestError{Field: field, Kind: ErrUnsupportedLanguage,
		Err: fmt.Errorf("%q is not one of %v", l, knownLanguages())}
}

// Languages lists the languages Run can run now: the offered languages whose interpreter
// resolves, in the order python3,
// node, bash (as far as offered).
func (r *Runtime) Languages() []Language {
	var out []Language
	for _, l := range r.langs {
		if _, err := r.svc.ResolveExecutable(r.interpreter(l, "")); err == nil {
			out = append(out, l)
		}
	}
	return out
}

func (r *Runtime) interpreter(l Language, override string) string {
	if override != "" {
		return override
	}
	if name, ok := r.interpreters[l]; ok {
		return name
	}
	lang, _ := lookupLanguage(l)
	return lang.interpreter
}

// Close ends every session and every run still going (each returns ErrClosed with what it
// did) and waits for them; a Service of the runtime's own is then closed, which removes its
// runtime root. A Service the caller gave (Config.Service) is left open. It is safe to call more
// than once.
func (r *Runtime) Close() error { return r.Shutdown(context.Background()) }

// Shutdown is Close bounded by ctx.
func (r *Runtime) Shutdown(ctx context.Context) error {
	if ctx == nil {
		return invalid("ctx", "nil context; pass context.Background() for no deadline")
	}
	r.mu.Lock()
	r.closed = true
	sessions := make([]*procSession, 0, len(r.sessions))
	for s := range r.sessions {
		sessions = append(sessions, s)
	}
	handles := make([]*subprocess.Handle, 0, len(r.handles))
	for h := range r.handles {
		handles = append(handles, h)
	}
	r.mu.Unlock()
	errs := make([]error, len(sessions)+len(handles))
	var wg sync.WaitGroup
	for i, s := range sessions {
		wg.Go(func() { errs[i] = s.Close() })
	}
	for i, h := range handles {
		wg.Go(func() {
			if err := h.Terminate(ctx); err != nil {
				errs[len(sessions)+i] = err
			}
		})
	}
	wg.Wait()
	if r.ownsSvc {
		errs = append(errs, r.svc.Shutdown(ctx))
	}
	done := make(chan struct{})
	go func() {
		r.runs.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		errs = append(errs, fmt.Errorf("runs still returning: %w", ctx.Err()))
	}
	if err := errors.Join(errs...); err != nil {
		return &Error{Op: "close", Err: err}
	}
	return nil
}

// track adds a run's tree to what Close ends; it reports false once the runtime is closed.
func (r *Runtime) track(h *subprocess.Handle) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.handles[h] = struct{}{}
	return true
}

func (r *Runtime) untrack(h *subprocess.Handle) {
	r.mu.Lock()
	delete(r.handles, h)
	r.mu.Unlock()
}

// addSession adds s to what Close ends; it reports false once the runtime is closed.
func (r *Runtime) addSession(s *procSession) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.sessions[s] = struct{}{}
	return true
}

func (r *Runtime) removeSession(s *procSession) {
	r.mu.Lock()
	delete(r.sessions, s)
	r.mu.Unlock()
}

func (r *Runtime) enter() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.runs.Add(1)
	return true
}

func (r *Runtime) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// serviceGone reports whether the runtime's Service is closed: Close deletes its runtime
// root, which lives as long as the Service. A caller's Service (Config.Service) may be closed
// behind the runtime's back.
func (r *Runtime) serviceGone() bool {
	_, err := os.Lstat(r.svc.RuntimeRoot())
	return errors.Is(err, fs.ErrNotExist)
}

// closedService is the error of op when the runtime's Service is closed, before anything is
// made under its runtime root; nil while it is open.
func (r *Runtime) closedService(op string, l Language) error {
	if !r.serviceGone() {
		return nil
	}
	return &Error{Op: op, Language: l, Kind: ErrClosed, Err: subprocess.ErrClosed,
		Hint: "the Service the runtime runs on was closed; make a new Service and runtime"}
}

// Run runs req.Code to its end, its timeout, or ctx's end, whichever comes first, and ends
// every process the code started before it returns. When ctx ends during the run, the code is
// terminated (SIGTERM, then SIGKILL after the grace) and Run returns its Result with Cancelled
// set and a nil error, within the grace of ctx's end.
//
// A code error (an uncaught exception, a syntax error, a non-zero exit, a timeout) is a
// Result, never a Go error. Run returns a Go error only when the runtime itself fails: the
// request is invalid (ErrInvalid), names a language the runtime does not offer
// (ErrUnsupportedLanguage), the interpreter cannot be found or started
// (ErrRuntimeUnavailable), the runtime or its Service is closed (ErrClosed, which matches
// subprocess.ErrClosed too), or ctx ended before the code started.
//
// The code runs in a fresh directory under the Service's
// runtime root (0700; the code file 0600), which is its working directory unless req.Dir says
// otherwise and which is removed before Run returns, whatever the outcome. When the code has
// exited, whatever it left running (background jobs, daemons that escaped with setsid) is
// ended too: SIGTERM, then SIGKILL after the grace.
//
// Run returns within timeout + grace (+ the time to start the interpreter), and within the
// grace of ctx's end. When the runtime is closed during the run, Run returns what the run did
// with an error wrapping ErrClosed.
func (r *Runtime) Run(ctx context.Context, req Request) (Result, error) {
	if ctx == nil {
		return Result{}, invalid("ctx", "nil context; pass context.Background() for no deadline")
	}
	lang, err := r.check(req)
	if err != nil {
		return Result{}, err
	}
	if err := ctx.Err(); err != nil {
		return Result{}, &Error{Op: "run", Language: req.Language, Err: err}
	}
	if !r.enter() {
		return Result{}, closed("run", req.Language, nil)
	}
	defer r.runs.Done()
	if err := r.closedService("run", req.Language); err != nil {
		return Result{}, err
	}
	name := r.interpreter(req.Language, req.Interpreter)
	path, err := r.resolve(req.Language, name)
	if err != nil {
		return Result{}, err
	}
	dir, err := os.MkdirTemp(r.svc.RuntimeRoot(), "run-") // 0700
	if err != nil {
		return Result{}, r.fail("prepare", req.Language, err)
	}
	res, err := r.run(ctx, req, lang, path, dir)
	if rmErr := os.RemoveAll(dir); rmErr != nil && !r.isClosed() {
		err = errors.Join(err, &Error{Op: "cleanup", Language: req.Language, Err: rmErr})
	}
	if err == nil && r.isClosed() {
		err = closed("run", req.Language, nil)
	}
	return res, err
}

// fail wraps err, as ErrClosed when the runtime or its Service was closed under the run.
func (r *Runtime) fail(op string, l Language, err error) error {
	if r.isClosed() || r.serviceGone() {
		return closed(op, l, err)
	}
	return &Error{Op: op, Language: l, Err: err}
}

// check validates req and returns its language.
func (r *Runtime) check(req Request) (language, error) {
	if req.Language == "" {
		return language{}, invalid("Language", fmt.Sprintf("no language given; one of %v", r.langs))
	}
	lang, ok := lookupLanguage(req.Language)
	if !ok || !slices.Contains(r.langs, req.Language) {
		return language{}, &RequestError{Field: "Language", Kind: ErrUnsupportedLanguage,
			Err: fmt.Errorf("%q is not one of %v", req.Language, r.langs)}
	}
	switch {
	case req.Timeout < 0:
		return language{}, invalid("Timeout", fmt.Sprintf("%v is negative; use 0 for the default", req.Timeout))
	case req.Grace < 0:
		return language{}, invalid("Grace", fmt.Sprintf("%v is negative; use 0 for the default", req.Grace))
	case req.DrainGrace < 0:
		return language{}, invalid("DrainGrace", fmt.Sprintf("%v is negative; use 0 for the default", req.DrainGrace))
	case req.StdoutBytes < 0 || req.StdoutBytes > subprocess.MaxTailBytes:
		return language{}, invalid("StdoutBytes", fmt.Sprintf("%d is outside [0, %d]; use 0 for the default", req.StdoutBytes, subprocess.MaxTailBytes))
	case req.StderrBytes < 0 || req.StderrBytes > subprocess.MaxTailBytes:
		return language{}, invalid("StderrBytes", fmt.Sprintf("%d is outside [0, %d]; use 0 for the default", req.StderrBytes, subprocess.MaxTailBytes))
	case req.SpillBytes < 0:
		return language{}, invalid("SpillBytes", "must not be negative; use 0 for the default")
	case strings.ContainsRune(req.Interpreter, 0):
		return language{}, invalid("Interpreter", "contains a NUL byte")
	}
	if err := checkEnv(req.Env); err != nil {
		return language{}, err
	}
	if req.Dir != "" {
		if fi, err := os.Stat(req.Dir); err != nil {
			return language{}, invalid("Dir", err.Error())
		} else if !fi.IsDir() {
			return language{}, invalid("Dir", req.Dir+" is not a directory")
		}
	}
	return lang, nil
}

// checkEnv checks NAME=VALUE entries.
func checkEnv(env []string) error {
	for i, kv := range env {
		name, _, ok := strings.Cut(kv, "=")
		switch {
		case !ok || name == "":
			return invalid("Env", fmt.Sprintf("entry %d %q is not NAME=VALUE", i, kv))
		case strings.ContainsRune(kv, 0):
			return invalid("Env", fmt.Sprintf("entry %d (%s) contains a NUL byte", i, name))
		}
	}
	return nil
}

// resolve finds the interpreter the way the Service will run it.
func (r *Runtime) resolve(l Language, name string) (string, error) {
	path, err := r.svc.ResolveExecutable(name)
	if err == nil {
		return path, nil
	}
	if errors.Is(err, subprocess.ErrInvalid) {
		return "", &RequestError{Field: "Interpreter", Kind: ErrInvalid, Err: err}
	}
	return "", &UnavailableError{Language: l, Interpreter: name, Searched: r.searched(name), Err: err}
}

// searched lists where ResolveExecutable looked for name: the one path it names, or the
// absolute directories of the scrubbed PATH (relative ones are never searched).
func (r *Runtime) searched(name string) []string {
	if strings.ContainsAny(name, "/"+string(filepath.Separator)) {
		if !filepath.IsAbs(name) {
			name = filepath.Join(r.svc.Cwd(), name)
		}
		return []string{name}
	}
	var path string
	for _, kv := range r.svc.Env() {
		k, v, _ := strings.Cut(kv, "=")
		if k == "PATH" || (runtime.GOOS == "windows" && strings.EqualFold(k, "PATH")) {
			path = v
		}
	}
	var dirs []string
	for _, d := range filepath.SplitList(path) {
		if d != "" && filepath.IsAbs(d) && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// run prepares the run directory, spawns the interpreter and gathers the result.
//
//	<dir>/            0700, removed by Run
//	  prelude.py|js   0600, the language's prelude (python3, node)
//	  work/           0700, the code's working directory (unless req.Dir)
//	    main.py|js|sh 0600, the code
//
// and, for a language with a prelude, the error report in the code's working directory
// (work/, or req.Dir): see openReport.
func (r *Runtime) run(ctx context.Context, req Request, lang language, path, dir string) (Result, error) {
	out := Result{Language: req.Language}
	work := filepath.Join(dir, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		return out, r.fail("prepare", req.Language, err)
	}
	codePath := filepath.Join(work, lang.codeFile)
	if err := writePrivate(codePath, req.Code); err != nil {
		return out, r.fail("prepare", req.Language, err)
	}
	cwd := cmp.Or(req.Dir, work)
	var preludePath string
	var report *os.File
	if lang.preludeFile != "" {
		rep, err := openReport(cwd)
		if err != nil {
			return out, r.fail("prepare", req.Language, err)
		}
		report = rep
		defer r.closeReport(req.Language, report)
		preludePath = filepath.Join(dir, lang.preludeFile)
		if err := writePrivate(preludePath, lang.prelude(codePath, report.Name())); err != nil {
			return out, r.fail("prepare", req.Language, err)
		}
	}
	spec := subprocess.Spec{
		Path: path, Args: lang.args(preludePath, codePath),
		Dir:        cwd,
		Readable:   []string{dir}, // the run directory, in the runtime root a sandbox makes private
		Env:        append(slices.Clip(lang.env), req.Env...),
		Timeout:    cmp.Or(req.Timeout, r.timeout),
		Grace:      cmp.Or(req.Grace, r.grace),
		DrainGrace: cmp.Or(req.DrainGrace, r.drain),
		Stdout:     subprocess.Output{TailBytes: cmp.Or(req.StdoutBytes, r.stdoutBytes), SpillBytes: cmp.Or(req.SpillBytes, r.spillBytes)},
		Stderr:     subprocess.Output{TailBytes: cmp.Or(req.StderrBytes, r.stderrBytes), SpillBytes: cmp.Or(req.SpillBytes, r.spillBytes)},
	}
	if req.Stdin != nil {
		spec.Stdin = subprocess.Input{Kind: subprocess.InputBytes, Data: req.Stdin}
	}
	h, err := r.svc.Spawn(ctx, spec)
	if err != nil {
		return out, r.spawnError(req.Language, path, err)
	}
	defer h.Close()
	if r.track(h) {
		defer r.untrack(h)
	} else if err := h.Terminate(ctx); err != nil { // closed as it spawned
		r.log.Warn("coderuntime: ending a run the closed runtime spawned", "err", err)
	}

	res, err := r.wait(ctx, h, spec.Grace)
	out.Outcome = res.Outcome // Cancelled when ctx's end (or the runtime's Close) ended the run
	out.Stdout, out.Stderr = output(res.Stdout), output(res.Stderr)
	if report != nil {
		ce, rerr := readCodeError(report, workPrefixes(work))
		if rerr != nil {
			r.log.Warn("coderuntime: error report unreadable", "language", req.Language, "err", rerr)
		}
		out.Error = ce
	}
	if err != nil {
		return out, r.fail("cleanup", req.Language, err)
	}
	return out, nil
}

// wait returns the settled result: Cancelled when ctx's end cut the run short (the Handle
// says so when Terminate came before the result settled). Whatever way the run ended, it then
// ends what the code left behind, so nothing outlives Run.
func (r *Runtime) wait(ctx context.Context, h *subprocess.Handle, grace time.Duration) (subprocess.Result, error) {
	// Enough for SIGTERM, the grace, SIGKILL, the kill wait and a drain grace.
	bound, cancel := context.WithTimeout(context.Background(), endBound(grace))
	defer cancel()
	res, err := h.Wait(ctx)
	var errs []error
	if err != nil {
		errs = append(errs, h.Terminate(bound))
		if res, err = h.Wait(bound); err != nil {
			return res, errors.Join(append(errs, err)...)
		}
	}
	// Whatever the code left running, including setsid daemons that left its group.
	errs = append(errs, h.Terminate(bound))
	return res, errors.Join(errs...)
}

// killWaitBound covers the Service's wait after SIGKILL plus scheduling slack.
const killWaitBound = 15 * time.Second

// endBound is how long ending a tree with this grace may take: SIGTERM, the grace, SIGKILL,
// the kill wait and a drain grace. A grace too large to double saturates.
func endBound(grace time.Duration) time.Duration {
	if grace > (math.MaxInt64-killWaitBound)/2 {
		return math.MaxInt64
	}
	return 2*grace + killWaitBound
}

func (r *Runtime) spawnError(l Language, path string, err error) error {
	switch {
	case errors.Is(err, subprocess.ErrClosed):
		return closed("run", l, err)
	case errors.Is(err, subprocess.ErrNotFound), errors.Is(err, subprocess.ErrPermission):
		return &UnavailableError{Language: l, Interpreter: path, Searched: []string{path}, Err: err}
	}
	return r.fail("spawn", l, err)
}

// openReport makes the error report of a run in dir, the code's working directory (which a
// sandbox keeps writable), and opens it for reading, before the code starts. The prelude opens
// it by name and removes the name before the code runs; the host reads it back only through
// the descriptor opened here, from the file it made itself. So nothing the code later puts at
// that path (a symbolic link to a file the code may not read, a FIFO that never ends, a huge
// file) is ever opened by the host, and at most maxErrorFile bytes are read.
func openReport(dir string) (*os.File, error) {
	name := filepath.Join(dir, ".subkit-error-"+randomHex(8)+".json")
	return os.OpenFile(name, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o600)
}

// closeReport closes the report and removes its name when the prelude did not (it never ran,
// or the system refused: Windows keeps the name of a file open elsewhere); it is in a
// directory of the run's own, or in the caller's Request.Dir.
func (r *Runtime) closeReport(l Language, f *os.File) {
	err := f.Close()
	if rerr := os.Remove(f.Name()); rerr != nil && !errors.Is(rerr, fs.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	if err != nil {
		r.log.Warn("coderuntime: closing the error report", "language", l, "err", err)
	}
}

// writePrivate creates path (it must not exist) with mode 0600 and writes s.
func writePrivate(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(s)
	return errors.Join(err, f.Close())
}

// workPrefixes are the spellings of the work directory, with a trailing separator, that may
// appear in an interpreter's file paths (node reports the real path, after symlinks).
func workPrefixes(work string) []string {
	sep := string(filepath.Separator)
	out := []string{work + sep}
	if real, err := filepath.EvalSymlinks(work); err == nil && real != work {
		out = append(out, real+sep)
	}
	return out
}
