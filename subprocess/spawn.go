package subprocess

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Spawn starts the tree described by spec. ctx bounds the start only: the tree's life is
// bounded by spec.Timeout, Terminate, Handle.Close and Service.Close.
//
// Errors wrap ErrInvalid (bad spec; the message names the field), ErrNotFound (no such
// program or directory; the message names the PATH searched), ErrPermission (not
// executable), ErrLimit (Config.MaxLive reached, or the system is out of descriptors,
// processes or memory, or the arguments are too large), ErrClosed, or ErrUnsupported (no
// process trees, or no terminals for Spec.TTY, on this platform).
func (s *Service) Spawn(ctx context.Context, spec Spec) (*Handle, error) {
	if err := s.valid("spawn"); err != nil {
		return nil, err
	}
	if err := checkCtx("spawn", spec.Path, ctx); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, &Error{Op: "spawn", Name: spec.Path, Err: err}
	}
	if err := spec.check(); err != nil {
		return nil, err
	}
	if capSpawn == levelUnsupported {
		return nil, &Error{Op: "spawn", Name: spec.Path, Kind: ErrUnsupported, Err: errors.New("no process-tree backend for " + platformName)}
	}
	if spec.TTY != nil && capTerminals == levelUnsupported {
		return nil, &Error{Op: "spawn", Name: spec.Path, Kind: ErrUnsupported, Err: errors.New("no terminals on " + platformName),
			Hint: "run the program with pipes (leave Spec.TTY nil)"}
	}
	done, err := s.admit("spawn", spec.Path)
	if err != nil {
		return nil, err
	}
	defer done()
	path, dir, env, err := s.locate("spawn", spec.Path, spec.Dir, spec.Env)
	if err != nil {
		return nil, err
	}

	grace := spec.Grace
	if grace == 0 {
		grace = DefaultGrace
	}
	drain := spec.DrainGrace
	if drain == 0 {
		drain = grace
	}
	h := &Handle{
		svc: s, argv: append([]string{spec.Path}, spec.Args...), grace: grace, drain: drain,
		leaderDone: make(chan struct{}), settledCh: make(chan struct{}), endedCh: make(chan struct{}),
		pumpsDone: make(chan struct{}),
	}
	h.spill = s.spillPlace(spec.SpillDir)
	c, err := s.confine("spawn", spec.Sandbox, path, h.argv, env, dir, spec.TTY != nil, spec.Readable)
	if err != nil {
		return nil, err
	}
	h.sandbox, h.proxy = c.report, c.proxy
	cmd := &exec.Cmd{Path: c.path, Args: c.args, Dir: dir, Env: c.env}
	s.backend.prepare(cmd)

	if spec.TTY != nil {
		if err := s.startTTY(h, cmd, c, *spec.TTY); err != nil {
			c.abandon(s)
			return nil, err
		}
		h.start = time.Now()
	} else {
		c.apply(cmd)
		var io stdio
		defer io.closeChildEnds()
		if err := io.setup(cmd, h, spec); err != nil {
			io.closeParentEnds()
			c.abandon(s)
			return nil, s.startError(spec.Path, err)
		}
		h.tree, h.pid, err = s.backend.start(cmd)
		if err != nil {
			io.closeParentEnds()
			c.abandon(s)
			return nil, s.startError(spec.Path, err)
		}
		h.start = time.Now()
		io.closeChildEnds()
	}

	h.startPumps()
	switch spec.Stdin.Kind {
	case InputBytes:
		h.startFeed(bytes.NewReader(spec.Stdin.Data))
	case InputReader:
		h.startFeed(spec.Stdin.Reader)
	}
	s.register(h)
	go h.run(spec.Timeout)
	return h, nil
}

// startFeed copies src to the child's stdin in a goroutine, then closes it. The child's
// leaving unread (EPIPE) or the settlement's stop ends the copy and is no error; a failed Read
// of src is kept for the Result.
func (h *Handle) startFeed(src io.Reader) {
	h.feed = &feeder{src: src, done: make(chan struct{})}
	go func() {
		defer close(h.feed.done)
		_, err := io.Copy(h.feedW, h.feed) // a feeder has no WriteTo, which would bypass stop
		h.feedW.Close()
		if err != nil && err != errFeedStopped && !errors.Is(err, syscall.EPIPE) && !errors.Is(err, os.ErrClosed) {
			h.feed.err = err
		}
	}()
}

// feeder is the Reader a stdin copy reads from: src, until stop.
type feeder struct {
	src  io.Reader
	done chan struct{} // closed when the copy has returned
	err  error         // why it failed; read once done is closed

	mu      sync.Mutex
	stopped bool
	reading bool // in src.Read, which may never return
}

var errFeedStopped = errors.New("stdin copy stopped")

func (f *feeder) Read(p []byte) (int, error) {
	f.mu.Lock()
	if f.stopped {
		f.mu.Unlock()
		return 0, errFeedStopped
	}
	f.reading = true
	f.mu.Unlock()
	n, err := f.src.Read(p)
	f.mu.Lock()
	f.reading = false
	f.mu.Unlock()
	return n, err
}

// stop makes the copy read no more and reports whether it is inside a Read of src now (it then
// ends when that Read returns).
func (f *feeder) stop() (reading bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopped = true
	return f.reading
}

// startPumps starts a pump per collected stream; the last one to return closes pumpsDone.
func (h *Handle) startPumps() {
	var left atomic.Int32
	for _, c := range h.collectors {
		if c != nil {
			left.Add(1)
		}
	}
	if left.Load() == 0 {
		close(h.pumpsDone)
		return
	}
	for i, c := range h.collectors {
		if c == nil {
			continue
		}
		go func() {
			c.pump(h.pumpsR[i], h.tty != nil) // a terminal's output is text
			if left.Add(-1) == 0 {
				close(h.pumpsDone)
			}
		}()
	}
}

// spillPlace is where spill files go for a Spec naming dir (the Service's own for "").
func (s *Service) spillPlace(dir string) *spillPlace {
	if dir == "" {
		return &s.spill
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.places[dir]
	if !ok {
		if s.places == nil {
			s.places = map[string]*spillPlace{}
		}
		p = &spillPlace{parent: dir}
		s.places[dir] = p
	}
	return p
}

// admit counts a spawn in flight unless the Service is closed or full; done ends the count
// once the new tree is registered, so Close never misses it.
func (s *Service) admit(op, name string) (done func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, &Error{Op: op, Name: name, Kind: ErrClosed}
	}
	if s.maxLive > 0 && len(s.live)+s.pending >= s.maxLive {
		return nil, &Error{Op: op, Name: name, Kind: ErrLimit,
			Err:  fmt.Errorf("%d trees are live, Config.MaxLive is %d", len(s.live)+s.pending, s.maxLive),
			Hint: "wait for a tree to end, or Terminate one; a tree stays live while its daemons run"}
	}
	s.pending++
	s.inflight.Add(1)
	return func() {
		s.mu.Lock()
		s.pending--
		s.mu.Unlock()
		s.inflight.Done()
	}, nil
}

// locate merges the environment, checks the working directory (empty: the Service's cwd) and
// resolves the program against its PATH, a relative path against the working directory.
func (s *Service) locate(op, name, dir string, extraEnv []string) (path, wd string, env []string, err error) {
	env = mergeEnv(s.env, extraEnv, s.rules)
	wd = s.cwd // checked by New; exec reports it if it has gone since
	if dir != "" {
		if fi, err := os.Stat(dir); err != nil {
			return "", "", nil, &Error{Op: op, Name: name, Kind: ErrNotFound, Err: fmt.Errorf("working directory: %w", err),
				Hint: "Dir must be an existing directory"}
		} else if !fi.IsDir() {
			return "", "", nil, invalid(op, "Dir", dir+" is not a directory")
		}
		if wd, err = filepath.Abs(dir); err != nil {
			return "", "", nil, &Error{Op: op, Name: name, Kind: ErrInvalid, Err: fmt.Errorf("working directory: %w", err)}
		}
	}
	if path, err = s.resolve(name, env, wd); err != nil {
		return "", "", nil, err
	}
	return path, wd, env, nil
}

// stdio holds the descriptors made for one spawn until they are handed over.
type stdio struct {
	child  []*os.File // ends the child gets; closed in the parent after Start
	parent []*os.File // ends the parent keeps; closed only when the spawn fails
}

func (io *stdio) pipe() (r, w *os.File, err error) {
	r, w, err = os.Pipe()
	if err != nil {
		return nil, nil, fmt.Errorf("create pipe: %w", err)
	}
	return r, w, nil
}

func (io *stdio) setup(cmd *exec.Cmd, h *Handle, spec Spec) error {
	switch spec.Stdin.Kind {
	case InputNull:
		// os/exec connects a nil Stdin to the null device.
	case InputInherit:
		cmd.Stdin = os.Stdin
	case InputBytes, InputPipe, InputReader:
		r, w, err := io.pipe()
		if err != nil {
			return err
		}
		io.child, io.parent = append(io.child, r), append(io.parent, w)
		cmd.Stdin = r
		if spec.Stdin.Kind == InputPipe {
			h.stdin = w
		} else {
			h.feedW = w
		}
	}
	for i, o := range []Output{spec.Stdout, spec.Stderr} {
		std := []*os.File{os.Stdout, os.Stderr}[i]
		var target *os.File
		switch o.Disposition {
		case Discard:
			// os/exec connects a nil writer to the null device.
		case Inherit:
			target = std
		case Pipe, Collect:
			r, w, err := io.pipe()
			if err != nil {
				return err
			}
			io.child, io.parent = append(io.child, w), append(io.parent, r)
			target = w
			if o.Disposition == Collect {
				h.collectors[i] = newCollector(Stream(i+1).String(), o, h.spill)
				h.pumpsR[i] = r
			} else if i == 0 {
				h.stdout = r
			} else {
				h.stderr = r
			}
		}
		if target != nil {
			if i == 0 {
				cmd.Stdout = target
			} else {
				cmd.Stderr = target
			}
		}
	}
	return nil
}

func (io *stdio) closeChildEnds() {
	for _, f := range io.child {
		f.Close()
	}
	io.child = nil
}

func (io *stdio) closeParentEnds() {
	for _, f := range io.parent {
		f.Close()
	}
	io.parent = nil
}

// startError classifies a failed start (creating pipes, fork, exec).
func (s *Service) startError(name string, err error) error {
	e := &Error{Op: "spawn", Name: name, Err: err}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		e.Kind = ErrNotFound
		e.Hint = "for a script, check that its #! interpreter exists"
	default:
		e.Kind, e.Hint = s.backend.startError(err)
		if e.Kind == nil && errors.Is(err, fs.ErrPermission) {
			e.Kind = ErrPermission
		}
	}
	return e
}
