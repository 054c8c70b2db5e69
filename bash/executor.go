package bash

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/subkit/subkit/subprocess"

	"github.com/subkit/subkit/internal/done"
	"github.com/subkit/subkit/internal/modelenv"
)

// stopSlack bounds, beyond the grace, the wait for a terminated tree: SIGKILL plus the time
// the kernel may take to reap it. It matches the Service's own bound after SIGKILL.
const stopSlack = 15 * time.Second

// Executor runs bash commands, each a fresh process tree owned by a subprocess Service. It is
// safe for concurrent use.
type Executor struct {
	cfg   Config // with defaults applied
	svc   *subprocess.Service
	owned bool // svc is the executor's own, closed by Close
	store *spillStore
	log   *slog.Logger
	shell subprocess.ShellCommand // the bash of every command: Path, and Env added to a command's

	life     context.Context // ends when Close has ended every tree
	stopLife context.CancelFunc
	watchers sync.WaitGroup // one goroutine per background process and per lingering tree
	inflight sync.WaitGroup // Exec and Start calls past the closed check

	mu        sync.Mutex
	closed    bool
	closing   chan struct{} // closed when Close begins
	closeDone chan struct{} // closed when Close has finished
	closeErr  error
	running   int                             // background slots taken
	procs     map[*Process]struct{}           // background processes not yet closed
	lingering map[*subprocess.Handle]struct{} // foreground trees not yet gone
}

// Stats is a point-in-time count of what an Executor owns.
type Stats struct {
	Running   int // background processes counted against MaxBackground
	Open      int // background processes not yet closed (running or not)
	Lingering int // foreground commands whose process group is not yet empty
}

// New validates cfg, sweeps the spill root, and starts an Executor. Errors wrap ErrInvalid (a
// *ConfigError naming the key) or come from creating the spill or runtime directory.
func New(cfg Config) (*Executor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	c := cfg.withDefaults()
	log := c.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	host, err := os.Getwd()
	if err != nil {
		return nil, &Error{Op: "new", Err: err, Hint: "the host's working directory is gone; set Config.Cwd"}
	}
	if c.Cwd == "" {
		c.Cwd = host
	} else if !filepath.IsAbs(c.Cwd) {
		c.Cwd = filepath.Join(host, c.Cwd)
	}
	if fi, err := os.Stat(c.Cwd); err != nil {
		return nil, &ConfigError{Key: "cwd", Field: "Cwd", Err: err}
	} else if !fi.IsDir() {
		return nil, &ConfigError{Key: "cwd", Field: "Cwd", Err: fmt.Errorf("%s is not a directory", c.Cwd)}
	}
	if c.Service != nil {
		if err := c.Service.Err(); errors.Is(err, subprocess.ErrClosed) {
			return nil, &Error{Op: "new", Kind: ErrClosed, Err: err, Hint: "Config.Service was closed; pass an open Service"}
		}
	}
	store, err := openStore(c.SpillDir, c.SpillMaxAge, c.SpillMaxTotalBytes)
	if err != nil {
		return nil, err
	}
	c.SpillDir = store.root
	svc, owned := c.Service, c.Service == nil
	if owned {
		svc, err = modelenv.NewService(subprocess.Config{
			Env: c.Env, ManagedPrefix: c.ManagedPrefix, AllowEnv: c.AllowEnv,
			TempDir: c.TempDir, SpillDir: store.dir, Logger: log, Guard: c.Guard, Sandbox: c.Sandbox,
		})
		if err != nil {
			store.close(context.Background())
			return nil, &Error{Op: "new", Err: err}
		}
	}
	shell, err := chooseShell(c.Shell, svc, gitBashFinder())
	if err != nil {
		if owned {
			svc.Close()
		}
		store.close(context.Background())
		return nil, err
	}
	c.Shell = shell.Path
	if len(shell.Env) > 0 {
		c.Shell = KitShell
	}
	if err := store.sweep(context.Background(), false); err != nil {
		log.Warn("spill sweep", "err", err)
	}
	life, stop := context.WithCancel(context.Background())
	return &Executor{
		cfg: c, svc: svc, owned: owned, store: store, log: log, shell: shell, life: life, stopLife: stop,
		closing: make(chan struct{}), closeDone: make(chan struct{}),
		procs: map[*Process]struct{}{}, lingering: map[*subprocess.Handle]struct{}{},
	}, nil
}

// Config returns the configuration in effect: every default applied, Cwd and SpillDir
// absolute.
func (e *Executor) Config() Config {
	c := e.cfg
	c.AllowEnv = append([]string(nil), c.AllowEnv...)
	if c.Env != nil {
		c.Env = append([]string{}, c.Env...)
	}
	return c
}

// Stats counts what the executor owns now.
func (e *Executor) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return Stats{Running: e.running, Open: len(e.procs), Lingering: len(e.lingering)}
}

// enter admits a call unless the executor is closed.
func (e *Executor) enter(op string) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return &Error{Op: op, Kind: ErrClosed}
	}
	e.inflight.Add(1)
	return nil
}

func spawnError(op string, err error) error {
	if errors.Is(err, subprocess.ErrClosed) {
		return &Error{Op: op, Kind: ErrClosed, Err: err, Hint: "the Service the executor runs on was closed; make a new Executor on an open one"}
	}
	return &Error{Op: op, Err: err}
}

// Exec runs a command in the foreground and returns its result once it has ended: exited,
// timed out (Result.TimedOut), or cancelled by ctx or Close (Result.Cancelled). On timeout or
// cancellation the whole process group gets SIGTERM, then SIGKILL after the grace, and Exec
// returns once it is gone; the result keeps the output produced until then. Processes the
// command left running (`server &`) are reported in the result and stay owned by the
// executor until they exit or Close ends them.
//
// The error is non-nil only when the command did not run: a bad request (ErrInvalid, a
// *RequestError naming the field), a closed executor (ErrClosed), or a failure to start bash
// (ErrNotFound, ErrPermission, ...).
func (e *Executor) Exec(ctx context.Context, req Request) (Result, error) {
	spec, timeout, err := e.spec(req, false)
	if err != nil {
		return Result{}, err
	}
	if err := e.enter("exec"); err != nil {
		return Result{}, err
	}
	defer e.inflight.Done()
	h, err := e.svc.Spawn(ctx, spec)
	if err != nil {
		return Result{}, spawnError("exec", err)
	}

	cancelled := false
	select {
	case <-h.Done():
	case <-ctx.Done():
		cancelled = true
	case <-e.closing:
		cancelled = true
	}
	return e.settle(h, req.Command, timeout, cancelled, false)
}

// settle ends a foreground command's tree when it was cancelled or timed out (by the caller's
// own timer: timedOut), waits for its result, and hands a tree that outlives the shell to
// adopt.
func (e *Executor) settle(h *subprocess.Handle, command string, timeout time.Duration, cancelled, timedOut bool) (Result, error) {
	if (cancelled || timedOut) && done.Closed(h.Done()) {
		cancelled, timedOut = false, false // it ended by itself meanwhile
	}
	if cancelled || timedOut {
		e.stop(h)
	}
	wctx, cancel := context.WithTimeout(context.Background(), e.cfg.Grace+stopSlack)
	defer cancel()
	sr, err := h.Wait(wctx)
	if err != nil {
		return Result{}, &Error{Op: "exec", Name: fmt.Sprint("pid ", h.Pid()), Err: err,
			Hint: "the process group could not be ended; Close will try again"}
	}
	defer e.store.release(sr)
	res := newResult(command, h, sr)
	// Close may end the tree before this call sees it closing: a signal then is Close's.
	res.TimedOut = res.TimedOut || timedOut
	res.Timeout, res.Cancelled = timeout, (cancelled || done.Closed(e.closing) && sr.Signal != "") && !res.TimedOut
	if survivors(h, &res) {
		h.Close()
	} else {
		e.adopt(h)
	}
	return res, nil
}

// stop terminates h's tree, bounded; a failure is logged (the result still settles, and
// Close tries again).
func (e *Executor) stop(h *subprocess.Handle) {
	ctx, cancel := context.WithTimeout(context.Background(), e.cfg.Grace+stopSlack)
	defer cancel()
	if err := h.Terminate(ctx); err != nil {
		e.log.Warn("terminate", "pid", h.Pid(), "err", err)
	}
}

// adopt keeps a foreground tree whose shell exited while members survive, until it is gone.
func (e *Executor) adopt(h *subprocess.Handle) {
	e.mu.Lock()
	e.lingering[h] = struct{}{}
	e.watchers.Add(1)
	e.mu.Unlock()
	go func() {
		defer e.watchers.Done()
		h.WaitForExit(e.life)
		e.mu.Lock()
		delete(e.lingering, h)
		e.mu.Unlock()
		h.Close()
	}()
}

// Sweep applies the spill retention policy now, as New and Close do: spill files older than
// SpillMaxAge go, then the oldest until the total fits SpillMaxTotalBytes. Files of running
// commands, of background processes not yet closed, and of other live executors are never
// touched.
func (e *Executor) Sweep(ctx context.Context) error {
	if err := e.enter("sweep"); err != nil {
		return err
	}
	defer e.inflight.Done()
	return e.store.sweep(ctx, false)
}

// Close terminates every running command, background process and lingering tree (SIGTERM,
// grace, SIGKILL), waits for each, sweeps the spill root and releases the executor's spill
// directory. It reports every failure joined. It is safe to call more than once; later calls
// wait for the first and return its error.
func (e *Executor) Close() error { return e.Shutdown(context.Background()) }

// Shutdown is Close bounded by ctx: when ctx ends first, the trees not yet gone are reported
// and the spill directory is still released.
func (e *Executor) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		select {
		case <-e.closeDone:
			return e.closeErr
		case <-ctx.Done():
			return &Error{Op: "close", Err: ctx.Err()}
		}
	}
	e.closed = true
	close(e.closing)
	e.mu.Unlock()

	var errs []error
	if e.owned { // one Shutdown ends every tree at once; a shared Service's other trees are not ours
		if err := e.svc.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	e.inflight.Wait() // Exec calls stop their trees on closing and return once they are gone (bounded by grace + 15s)
	e.stopLife()      // lingering trees are closed (terminated) by their watchers
	e.watchers.Wait()
	e.mu.Lock()
	procs := make([]*Process, 0, len(e.procs))
	for p := range e.procs {
		procs = append(procs, p)
	}
	e.mu.Unlock()
	var wg sync.WaitGroup
	var emu sync.Mutex
	for _, p := range procs {
		wg.Go(func() {
			if err := p.Close(); err != nil {
				emu.Lock()
				errs = append(errs, err)
				emu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := e.store.close(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		e.closeErr = &Error{Op: "close", Err: err}
	}
	close(e.closeDone)
	return e.closeErr
}

// Hurry cuts short the grace of every termination of the executor's commands, in progress or
// to come: what SIGTERM has not ended gets SIGKILL at once (subprocess.Service.Hurry; with
// Config.Service, the shared Service's). A CLI calls it on a second Ctrl-C.
func (e *Executor) Hurry() { e.svc.Hurry() }
