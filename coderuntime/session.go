package coderuntime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/subkit/subkit/internal/done"
	"github.com/subkit/subkit/subprocess"
)

// MaxCellBytes bounds the code of one Cell.
const MaxCellBytes = 16 << 20

// defaultStartTimeout bounds the start of a session's interpreter, up to its driver's first
// message (SessionConfig.StartTimeout).
const defaultStartTimeout = 30 * time.Second

// Session is one long-lived interpreter in which cells of code run one after another, sharing
// their state (variables, imports, functions, the working directory), as in a notebook. It is
// safe for concurrent use: cells run one at a time, in the order their Run calls got the
// session. Every implementation must pass runtimetest.RunSessions.
type Session interface {
	// Run runs one cell to its end, its timeout or ctx's end, calling cb as its output,
	// results and error arrive. When the cell runs past its timeout or ctx ends, it is
	// interrupted (SIGINT: KeyboardInterrupt in python3, an interrupted script in node) and
	// the interpreter is probed; when the probe gets no answer within the grace, the
	// interpreter is ended with every process the cell started, and the next cell runs in a
	// fresh one (Execution.Restarted). A code error or an interruption is in the Execution,
	// never a Go error: Run returns a Go error only when the cell is invalid (ErrInvalid), the
	// session is closed (ErrClosed), ctx ended before the cell started, or an interpreter
	// could not be started. When the session is closed during the cell, Run returns what the
	// cell did with an error wrapping ErrClosed.
	Run(ctx context.Context, cell Cell, cb Callbacks) (Execution, error)
	// Restart replaces the interpreter with a fresh one: the state is gone, and every process
	// the session's cells started is ended. It waits for a cell running to return first.
	Restart(ctx context.Context) error
	// Language is the session's language.
	Language() Language
	// Close ends the interpreter and everything the cells started, and removes the session's
	// private directory. It is safe to call more than once; Run after Close fails with
	// ErrClosed.
	Close() error
}

// SessionConfig configures a session. Zero fields take the runtime's defaults.
type SessionConfig struct {
	// Language is python3 or node; required. bash sessions are shell sessions: package shell.
	Language Language
	// Interpreter overrides the program: a name searched in the runtime's PATH, or an absolute
	// path. Empty means the runtime's choice for Language.
	Interpreter string
	// Env entries (NAME=VALUE) are set in the interpreter's environment over the runtime's
	// credential-scrubbed base, and win.
	Env []string
	// Dir is the code's working directory at the start (and after a restart). Empty means the
	// session's private directory, removed by Close.
	Dir string
	// Timeout is a cell's timeout when the Cell gives none; 0 means the runtime's Timeout.
	Timeout time.Duration
	// Grace is how long an interrupted cell has to answer the probe before the interpreter is
	// restarted, and the SIGTERM-to-SIGKILL wait when it is ended; 0 means the runtime's Grace.
	Grace time.Duration
	// StdoutBytes and StderrBytes are how many trailing bytes of each stream an Execution
	// keeps; 0 means the runtime's budgets.
	StdoutBytes, StderrBytes int
	// StartTimeout bounds the start of the interpreter; 0 means 30s.
	StartTimeout time.Duration
}

// Cell is one piece of code for a session.
type Cell struct {
	// Code is run in the session's state. In python3 and node the value of a trailing
	// expression is the main result, and top-level await works; at most MaxCellBytes.
	Code string
	// Timeout bounds the cell; 0 means the session's Timeout.
	Timeout time.Duration
}

// Callbacks receive a cell's output, results and error as they happen, from the session's
// goroutines, one call at a time and never after Run returns. They must return promptly and
// must not call the session's methods (Run waits for them): a callback that falls behind
// output arriving faster than it reads (by more than about 1 MiB) misses the bytes in between,
// which the Execution counts in TotalBytes. Nil fields are not called.
type Callbacks struct {
	// Stdout and Stderr get the cell's output in chunks that never end inside a UTF-8
	// character the code wrote whole.
	Stdout, Stderr func(text string)
	// Result gets each result: display() calls, then the main result.
	Result func(r CellResult)
	// Error gets the cell's error when it raised, once it has ended.
	Error func(e CodeError)
	// BackgroundError gets each background error as it is reported (see
	// Execution.BackgroundErrors).
	BackgroundError func(e BackgroundError)
}

// Execution is what one cell did.
type Execution struct {
	// ExecutionCount numbers the cells of the interpreter: 1 for the first after a start or a
	// restart.
	ExecutionCount int
	// Stdout and Stderr are the cell's output, each kept apart and bounded by the session's
	// budgets. Output that processes of earlier cells wrote between cells is counted with the
	// next cell. SpillPath is never set.
	Stdout, Stderr Output
	// Results are the cell's rich results, in order: display() calls, then the main result
	// (the value of a trailing expression), then (python3) the matplotlib figures left open.
	// What code earlier cells left running displayed meanwhile is among them, with FromCell
	// naming its cell.
	Results []CellResult
	// ResultsDropped counts results left out beyond 1,000 or 64 MiB per cell.
	ResultsDropped int
	// Error is the exception that ended the cell (a KeyboardInterrupt or node's interrupted
	// script error for an interrupted cell, SystemExit for sys.exit), or nil. It is raised by
	// the cell's own code: synchronously, by the promise the cell awaits, or (node) by a
	// callback or an unhandled rejection of this cell's code before the cell ended. What code
	// an earlier cell left running raises is a background error, never this.
	Error *CodeError
	// BackgroundErrors are the uncaught exceptions that did not end this cell, raised while it
	// ran or since the cell before it ended: in node, those of callbacks and promises that
	// earlier cells' code scheduled (a timer that throws, a rejection nothing handles); in
	// python3, those that ended a thread, which never ends the cell that runs meanwhile (this
	// one's threads included). Each says which cell's code started it. The cell keeps its own
	// result, output and Error.
	BackgroundErrors []BackgroundError
	// BackgroundErrorsDropped counts background errors left out beyond 100 per cell.
	BackgroundErrorsDropped int
	// Notes are what the session says about the cell besides its output and results: in
	// python3, a matplotlib figure that could not be rendered (why, and what to do), or a GUI
	// backend that could not open here and was replaced by the session's.
	Notes []string
	// TimedOut: the cell ran past its timeout and was interrupted.
	TimedOut bool
	// Cancelled: Run's ctx ended during the cell, which was interrupted.
	Cancelled bool
	// Interrupted: the cell was interrupted: SIGINT sent to the interpreter (and its process
	// group), or for node, where the cell awaits, an interrupt message to its driver.
	Interrupted bool
	// Restarted: the state of the session is gone. The interpreter ended during the cell (it
	// did not answer the probe after an interrupt and was ended with every process the cell
	// started, or the code ended it: os._exit, process.exit, a crash), or it had ended since
	// the previous cell and this one ran in a fresh interpreter.
	Restarted bool
	// InterpreterExit says how the interpreter ended, when it ended during the cell; nil
	// otherwise.
	InterpreterExit *ExitStatus
	// Duration is the cell's wall time.
	Duration time.Duration
}

// CellResult is one rich result: a MIME bundle, as Jupyter's display data.
type CellResult struct {
	// MIME maps a MIME type to the data: text for text types (text/plain, text/html,
	// text/markdown, image/svg+xml, text/latex, application/javascript), JSON text for
	// application/json, base64 for binary ones (image/png, image/jpeg, application/pdf).
	// text/plain is always present.
	MIME map[string]string `json:"mime"`
	// Main is set for the main result, the value of the cell's trailing expression.
	Main bool `json:"main"`
	// FromCell is 0 for the cell's own results. It is the ExecutionCount of an earlier cell
	// when code that cell left running displayed it (a node callback that cell's code
	// scheduled, a python3 thread it started), reported with the cell running then or the next.
	FromCell int `json:"from_cell,omitempty"`
}

// BackgroundError is an uncaught exception of code a cell left running (a node timer, callback
// or promise; a python3 thread), reported with the cell running when it was raised, or with
// the next one when none was.
type BackgroundError struct {
	// Cell is the ExecutionCount of the cell whose code started what raised it (scheduled the
	// callback, created the promise, started the thread), in the interpreter that ran it; 0 when
	// no cell can be named.
	Cell int `json:"cell"`
	// CodeError is the exception; a python3 thread's traceback starts as Python prints it
	// ("Exception in thread NAME:").
	CodeError
}

// ExitStatus is how an interpreter ended.
type ExitStatus struct {
	ExitCode int    `json:"exit_code"` // -1 when a signal ended it
	Signal   string `json:"signal"`    // "SIGKILL", ...; "" when it exited
}

// sessionsSupported: sessions need Unix sockets in the runtime root that python3 and node can
// both reach.
const sessionsSupported = runtime.GOOS != "windows"

// SessionLanguages lists the offered languages that sessions support (python3, node) whose
// interpreter resolves now.
func (r *Runtime) SessionLanguages() []Language {
	if !sessionsSupported {
		return nil
	}
	var out []Language
	for _, l := range r.Languages() {
		if _, ok := lookupSessionLanguage(l); ok {
			out = append(out, l)
		}
	}
	return out
}

// procSession is the Runtime's Session: the interpreter is a process tree of the
// runtime's Service, running the language's driver in the session's private directory:
//
//	<runtime root>/session-*/   0700, removed by Close
//	  driver.py|js              0600
//	  ctl                       the control socket, while the interpreter starts
//	  work/                     0700, the code's working directory (unless SessionConfig.Dir)
type procSession struct {
	rt           *Runtime
	lang         Language
	info         sessionLanguage
	path         string
	env          []string
	extraEnv     []string
	dir          string
	workArg      string
	timeout      time.Duration
	grace        time.Duration
	startTimeout time.Duration
	budgets      [2]int

	turn chan struct{} // one slot: the Run or Restart holding the session

	mu     sync.Mutex
	closed bool
	k      *kernel // nil until started, and after the interpreter was ended

	closeOnce sync.Once
	closeErr  error
}

// NewSession starts a session (see Session) and returns once its interpreter is ready.
// Errors: ErrInvalid (a *RequestError naming the SessionConfig field), ErrUnsupportedLanguage
// (bash, or a language the runtime does not offer), ErrRuntimeUnavailable, ErrUnsupported
// (Windows), ErrClosed, ctx's error, or an *Error when the interpreter did not start (with
// what it printed).
func (r *Runtime) NewSession(ctx context.Context, cfg SessionConfig) (Session, error) {
	if ctx == nil {
		return nil, invalid("ctx", "nil context; pass context.Background() for no deadline")
	}
	info, err := r.checkSession(cfg)
	if err != nil {
		return nil, err
	}
	if !sessionsSupported {
		return nil, &Error{Op: "new session", Language: cfg.Language, Kind: ErrUnsupported,
			Err:  errors.New("sessions need Unix domain sockets that python3 and node reach"),
			Hint: "on " + runtime.GOOS + " use Run"}
	}
	if err := ctx.Err(); err != nil {
		return nil, &Error{Op: "new session", Language: cfg.Language, Err: err}
	}
	if r.isClosed() {
		return nil, closed("new session", cfg.Language, nil)
	}
	if err := r.closedService("new session", cfg.Language); err != nil {
		return nil, err
	}
	path, err := r.resolve(cfg.Language, r.interpreter(cfg.Language, cfg.Interpreter))
	if err != nil {
		return nil, err
	}
	s := &procSession{
		rt: r, lang: cfg.Language, info: info, path: path, env: slices.Clone(cfg.Env),
		timeout:      cmp.Or(cfg.Timeout, r.timeout),
		grace:        cmp.Or(cfg.Grace, r.grace),
		startTimeout: cmp.Or(cfg.StartTimeout, defaultStartTimeout),
		budgets:      [2]int{cmp.Or(cfg.StdoutBytes, r.stdoutBytes), cmp.Or(cfg.StderrBytes, r.stderrBytes)},
		turn:         make(chan struct{}, 1),
	}
	if cfg.Language == Python3 && !hasVar(append(r.svc.Env(), cfg.Env...), "MPLBACKEND") {
		s.extraEnv = []string{"MPLBACKEND=" + mplBackend}
	}
	if !r.addSession(s) {
		return nil, closed("new session", cfg.Language, nil)
	}
	s.turn <- struct{}{} // the start holds the session: a Close (the runtime's) waits for it
	_, err = s.start(ctx, cfg.Dir)
	<-s.turn
	if err != nil {
		if cerr := s.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
		return nil, err
	}
	return s, nil
}

// start prepares the session's directory and starts its first interpreter.
func (s *procSession) start(ctx context.Context, dir string) (*kernel, error) {
	if err := s.prepare(dir); err != nil {
		return nil, err
	}
	k, err := s.startKernel(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	gone := s.closed
	if !gone {
		s.k = k
	}
	s.mu.Unlock()
	if gone { // the runtime was closed meanwhile
		return nil, closed("new session", s.lang, k.stop())
	}
	return k, nil
}

// prepare makes the session's directory, its driver file and its work directory.
func (s *procSession) prepare(dir string) error {
	d, err := os.MkdirTemp(s.rt.svc.RuntimeRoot(), "session-") // 0700
	if err != nil {
		return s.fail("prepare", err)
	}
	s.mu.Lock()
	s.dir = d
	s.mu.Unlock()
	if err := writePrivate(filepath.Join(d, s.info.driverFile), s.info.driver); err != nil {
		return s.fail("prepare", err)
	}
	if dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return s.fail("prepare", err)
		}
		s.workArg = abs
		return nil
	}
	if err := os.Mkdir(filepath.Join(d, "work"), 0o700); err != nil {
		return s.fail("prepare", err)
	}
	s.workArg = "work"
	return nil
}

func (r *Runtime) checkSession(cfg SessionConfig) (sessionLanguage, error) {
	switch {
	case cfg.Language == "":
		return sessionLanguage{}, invalid("Language", "no language given; python3 or node")
	case cfg.Language == Bash:
		return sessionLanguage{}, &RequestError{Field: "Language", Kind: ErrUnsupportedLanguage,
			Err: errors.New("bash has no code session here: stateful shell sessions are package shell's")}
	}
	info, ok := lookupSessionLanguage(cfg.Language)
	if !ok || !slices.Contains(r.langs, cfg.Language) {
		return sessionLanguage{}, &RequestError{Field: "Language", Kind: ErrUnsupportedLanguage,
			Err: fmt.Errorf("%q: sessions run python3 or node, as far as the runtime offers them (%v)", cfg.Language, r.langs)}
	}
	switch {
	case cfg.Timeout < 0:
		return info, invalid("Timeout", fmt.Sprintf("%v is negative; use 0 for the default", cfg.Timeout))
	case cfg.Grace < 0:
		return info, invalid("Grace", fmt.Sprintf("%v is negative; use 0 for the default", cfg.Grace))
	case cfg.StartTimeout < 0:
		return info, invalid("StartTimeout", fmt.Sprintf("%v is negative; use 0 for the default", cfg.StartTimeout))
	case cfg.StdoutBytes < 0 || cfg.StdoutBytes > subprocess.MaxTailBytes:
		return info, invalid("StdoutBytes", fmt.Sprintf("%d is outside [0, %d]", cfg.StdoutBytes, subprocess.MaxTailBytes))
	case cfg.StderrBytes < 0 || cfg.StderrBytes > subprocess.MaxTailBytes:
		return info, invalid("StderrBytes", fmt.Sprintf("%d is outside [0, %d]", cfg.StderrBytes, subprocess.MaxTailBytes))
	case strings.ContainsRune(cfg.Interpreter, 0):
		return info, invalid("Interpreter", "contains a NUL byte")
	}
	if err := checkEnv(cfg.Env); err != nil {
		return info, err
	}
	if cfg.Dir != "" {
		if fi, err := os.Stat(cfg.Dir); err != nil {
			return info, invalid("Dir", err.Error())
		} else if !fi.IsDir() {
			return info, invalid("Dir", cfg.Dir+" is not a directory")
		}
	}
	return info, nil
}

// hasVar reports whether env sets name.
func hasVar(env []string, name string) bool {
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == name {
			return true
		}
	}
	return false
}

func (s *procSession) fail(op string, err error) error {
	if s.isClosed() || s.rt.isClosed() || s.rt.serviceGone() {
		return closed(op, s.lang, err)
	}
	return &Error{Op: op, Language: s.lang, Err: err}
}

func (s *procSession) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// Language is the session's language.
func (s *procSession) Language() Language {
	if s == nil {
		return ""
	}
	return s.lang
}

// acquire takes the session's turn, or fails when ctx ends first.
func (s *procSession) acquire(ctx context.Context, op string) error {
	select {
	case s.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return &Error{Op: op, Language: s.lang, Err: fmt.Errorf("waiting for the cell before: %w", ctx.Err())}
	}
}

func (s *procSession) release() { <-s.turn }

func (c Cell) check() error {
	switch {
	case c.Timeout < 0:
		return invalid("Cell.Timeout", fmt.Sprintf("%v is negative; use 0 for the session's", c.Timeout))
	case len(c.Code) > MaxCellBytes:
		return invalid("Cell.Code", fmt.Sprintf("%d bytes, above MaxCellBytes (%d); put the code in a file and run that", len(c.Code), MaxCellBytes))
	}
	return nil
}

// Run runs cell; see Session.Run.
func (s *procSession) Run(ctx context.Context, cell Cell, cb Callbacks) (Execution, error) {
	if s == nil || s.rt == nil {
		return Execution{}, invalid("Session", "not a session NewSession returned")
	}
	if ctx == nil {
		return Execution{}, invalid("ctx", "nil context; pass context.Background() for no deadline")
	}
	if err := cell.check(); err != nil {
		return Execution{}, err
	}
	if err := ctx.Err(); err != nil {
		return Execution{}, &Error{Op: "run", Language: s.lang, Err: err}
	}
	if err := s.acquire(ctx, "run"); err != nil {
		return Execution{}, err
	}
	defer s.release()
	k, lost, err := s.ensure(ctx)
	if err != nil {
		return Execution{}, err
	}
	ex, err := s.run(ctx, k, cell, cb)
	ex.Restarted = ex.Restarted || lost
	if err == nil && s.isClosed() {
		err = closed("run", s.lang, nil)
	}
	return ex, err
}

// ensure returns the running interpreter, starting one when there is none; lost says the
// previous one had ended since it was last reported.
func (s *procSession) ensure(ctx context.Context) (*kernel, bool, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, false, closed("run", s.lang, nil)
	}
	k := s.k
	s.mu.Unlock()
	if k != nil && !k.gone() {
		return k, false, nil
	}
	lost := k != nil // it ended between cells
	if lost {
		s.drop(k)
	}
	k, err := s.startKernel(ctx)
	if err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, false, closed("run", s.lang, k.stop())
	}
	s.k = k
	s.mu.Unlock()
	return k, lost, nil
}

// drop ends k and forgets it.
func (s *procSession) drop(k *kernel) {
	if err := k.stop(); err != nil {
		s.rt.log.Warn("coderuntime: ending a session's interpreter", "language", s.lang, "err", err)
	}
	s.mu.Lock()
	if s.k == k {
		s.k = nil
	}
	s.mu.Unlock()
}

func (s *procSession) run(ctx context.Context, k *kernel, cell Cell, cb Callbacks) (Execution, error) {
	begin := time.Now()
	c := k.begin(cb)
	ex := Execution{ExecutionCount: c.count}
	died, sent := false, true
	// The cell is sent whole even when ctx ends meanwhile (a frame cut short would leave only a
	// restart): it is then interrupted as any other. A driver that does not take it within the
	// grace after ctx's end is not answering.
	sendCtx, endSend := graceAfter(ctx, s.grace)
	err := k.send(sendCtx, &message{Type: "execute", ID: c.id, Count: c.count, Code: cell.Code, Nonce: c.nonce})
	endSend()
	if err != nil {
		// The channel is broken, or the frame was cut short: either way it cannot be trusted
		// any more, nor probed.
		died, sent, ex.Cancelled = true, false, ctx.Err() != nil
	}
	if sent {
		timer := time.NewTimer(cmp.Or(cell.Timeout, s.timeout))
		select {
		case <-c.replied:
		case <-k.dead:
			died = true
		case <-k.h.Done():
			died = true
		case <-timer.C:
			ex.TimedOut = true
		case <-ctx.Done():
			ex.Cancelled = true
		}
		timer.Stop()
		if done.Closed(c.replied) { // it ended on its own just then
			ex.TimedOut, ex.Cancelled, died = false, false, false
		}
	}
	if sent && (ex.TimedOut || ex.Cancelled) {
		var answered bool
		answered, ex.Interrupted = s.interrupt(k, c)
		died = !answered
	}
	if died {
		s.drop(k) // ends every process of the tree, the cell's included
		ex.Restarted = true
		exit := k.exit
		ex.InterpreterExit = &exit
	} else {
		k.awaitMarks(c, s.grace)
	}
	g := k.finish(c)
	ex.Stdout, ex.Stderr = g.out[0], g.out[1]
	ex.Results, ex.ResultsDropped = g.results.list, g.results.dropped
	ex.BackgroundErrors, ex.BackgroundErrorsDropped = g.background.list, g.background.dropped
	if g.reply != nil {
		ex.Error = g.reply.Error
		ex.Notes = g.reply.Notes
	}
	ex.Duration = time.Since(begin)
	return ex, nil
}

// interrupt asks the interpreter to stop the running cell; it reports whether the interpreter
// answered within the grace (the cell has then ended too: the driver answers in order), and
// whether the cell was asked to stop (signalled, as Execution.Interrupted). node: see
// interruptNode. python3: SIGINT to the interpreter's group, then a probe.
func (s *procSession) interrupt(k *kernel, c *cellState) (answered, signalled bool) {
	ctx, cancel := context.WithTimeout(context.Background(), s.grace)
	defer cancel()
	if s.lang == Node {
		return s.interruptNode(ctx, k, c)
	}
	// python3's driver ignores a SIGINT that lands before the cell's code runs, as it does
	// between cells (while it waits for the cell, it cannot tell a SIGINT meant for the cell
	// from one meant for the cell before), so SIGINT waits for its word that the code is about
	// to run. A cell that ended first is not interrupted.
	select {
	case <-c.started:
	case <-c.replied:
		return true, false
	case <-k.dead:
		return false, false
	case <-k.h.Done():
		return false, false
	case <-ctx.Done():
		return false, false
	}
	if err := k.h.Signal(os.Interrupt); err != nil {
		s.rt.log.Warn("coderuntime: interrupting a cell", "language", s.lang, "err", err)
	}
	probed, err := k.probe(ctx)
	if err != nil {
		s.rt.log.Warn("coderuntime: probing an interrupted cell's interpreter", "language", s.lang, "err", err)
		return false, true
	}
	// A signal can be taken without the cell seeing it: python3 runs its handler only between
	// bytecodes, so one that lands just before the code enters a blocking call (time.sleep, a
	// read) waits for that call to return. The interpreter gets it again until it answers; the
	// driver ignores a SIGINT between cells.
	again := time.NewTicker(resendInterrupt)
	defer again.Stop()
	for {
		select {
		case <-probed:
			return done.Closed(c.replied), true
		case <-again.C:
			if err := k.h.Signal(os.Interrupt); err != nil {
				s.rt.log.Warn("coderuntime: interrupting a cell", "language", s.lang, "err", err)
			}
			continue
		case <-k.dead:
		case <-k.h.Done():
		case <-ctx.Done():
		}
		return false, true
	}
}

// interruptNode interrupts node's cell c. A message ends it where it awaits (the driver
// rejects what it awaits); only SIGINT breaks its synchronous part (vm's breakOnSigint), and it
// is sent only while the driver has not said that part ended, after nodeSyncSettle: node's
// watchdog may take a SIGINT that lands just as the part ends and then end the driver's own
// next step, and a late one would reach a later cell (the driver ignores a SIGINT but for the
// cell it was asked to interrupt).
func (s *procSession) interruptNode(ctx context.Context, k *kernel, c *cellState) (answered, signalled bool) {
	if err := k.send(ctx, &message{Type: "interrupt", Cell: c.id}); err != nil {
		s.rt.log.Warn("coderuntime: interrupting a cell", "language", s.lang, "err", err)
		return false, false
	}
	again := time.NewTimer(nodeSyncSettle)
	defer again.Stop()
	sync := c.syncDone
	for {
		select {
		case <-c.replied:
			return true, true
		case <-sync: // the message does the rest
			sync = nil
			again.Stop()
			continue
		case <-again.C:
			if err := k.h.Signal(os.Interrupt); err != nil {
				s.rt.log.Warn("coderuntime: interrupting a cell", "language", s.lang, "err", err)
			}
			again.Reset(resendInterrupt)
			continue
		case <-k.dead:
		case <-k.h.Done():
		case <-ctx.Done():
		}
		return false, true
	}
}

// nodeSyncSettle is how long an interrupted node cell has to say its synchronous part ended
// before SIGINT is sent to break it: a cell that ends its part as it is interrupted says so
// well within it, even on a busy machine (20 runs of TestSessionInterruptAnyMoment/node, 80 cells
// each, on 2 cores loaded to about 20, never sent one too soon); a loop that never ends is
// broken this much later.
const nodeSyncSettle = 250 * time.Millisecond

// graceAfter returns a context with ctx's values that ends grace after ctx does, and its
// release.
func graceAfter(ctx context.Context, grace time.Duration) (context.Context, context.CancelFunc) {
	bound, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-t.C:
			cancel()
		case <-bound.Done():
		}
	})
	return bound, func() {
		stop()
		cancel()
	}
}

// resendInterrupt is how often the interpreter is sent SIGINT again while an interrupted cell
// has not ended.
const resendInterrupt = 500 * time.Millisecond

// Restart replaces the interpreter; see Session.Restart.
func (s *procSession) Restart(ctx context.Context) error {
	if s == nil || s.rt == nil {
		return invalid("Session", "not a session NewSession returned")
	}
	if ctx == nil {
		return invalid("ctx", "nil context; pass context.Background() for no deadline")
	}
	if err := ctx.Err(); err != nil {
		return &Error{Op: "restart", Language: s.lang, Err: err}
	}
	if err := s.acquire(ctx, "restart"); err != nil {
		return err
	}
	defer s.release()
	s.mu.Lock()
	k := s.k
	s.mu.Unlock()
	if k != nil {
		s.drop(k)
	}
	_, _, err := s.ensure(ctx)
	if err != nil {
		var e *Error
		if errors.As(err, &e) && e.Op == "run" {
			e.Op = "restart"
		}
	}
	return err
}

// Close ends the session; see Session.Close.
func (s *procSession) Close() error {
	if s == nil || s.rt == nil {
		return invalid("Session", "not a session NewSession returned")
	}
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		k, dir := s.k, s.dir
		s.mu.Unlock()
		var errs []error
		if k != nil {
			errs = append(errs, k.stop()) // a cell running sees its end and returns
		}
		s.turn <- struct{}{} // wait for it
		<-s.turn
		s.mu.Lock()
		k = s.k // a Run that started one before it saw closed has stopped it
		s.k = nil
		s.mu.Unlock()
		if k != nil {
			errs = append(errs, k.stop())
		}
		if dir != "" {
			if err := os.RemoveAll(dir); err != nil {
				errs = append(errs, err)
			}
		}
		s.rt.removeSession(s)
		if err := errors.Join(errs...); err != nil {
			s.closeErr = &Error{Op: "close session", Language: s.lang, Err: err}
		}
	})
	return s.closeErr
}
