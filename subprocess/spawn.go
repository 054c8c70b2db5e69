package subprocess

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Spawn starts the tree described by spec. ctx bounds the start only: the tree's life is
// bounded by spec.Timeout, Terminate, Handle.Close and Service.Close.
//
// Errors wrap ErrInvalid (bad spec; the message names the field), ErrNotFound (no such
// program or directory; the message names the PATH searched), ErrPermission (not
// executable), ErrClosed, or ErrUnsupported.
func (s *Service) Spawn(ctx context.Context, spec Spec) (*Handle, error) {
	if err := ctx.Err(); err != nil {
		return nil, &Error{Op: "spawn", Name: spec.Path, Err: err}
	}
	if err := spec.check(); err != nil {
		return nil, err
	}
	if capSpawn == levelUnsupported {
		return nil, &Error{Op: "spawn", Name: spec.Path, Kind: ErrUnsupported, Err: errors.New("no process-tree backend for " + platformName)}
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
		leaderDone: make(chan struct{}), settledCh: make(chan struct{}),
		place: &spillPlace{parent: s.spill},
	}
	cmd := &exec.Cmd{Path: path, Args: h.argv, Dir: dir, Env: env}
	s.backend.prepare(cmd)

	var io stdio
	defer io.closeChildEnds()
	if err := io.setup(cmd, h, spec); err != nil {
		io.closeParentEnds()
		return nil, &Error{Op: "spawn", Name: spec.Path, Err: err, Hint: "the process may be out of file descriptors"}
	}
	if err := s.backend.start(cmd); err != nil {
		io.closeParentEnds()
		return nil, startError(spec.Path, err)
	}
	h.start = time.Now()
	h.pid = cmd.Process.Pid
	io.closeChildEnds()
	h.tree, err = s.backend.attach(cmd)
	if err != nil {
		cmd.Wait()
		io.closeParentEnds()
		return nil, &Error{Op: "spawn", Name: spec.Path, Err: err}
	}

	for i, c := range h.collectors {
		if c != nil {
			go c.pump(h.pumpsR[i], false)
		}
	}
	if spec.Stdin.Kind == InputBytes {
		h.feedDone = make(chan struct{})
		go func(data []byte) {
			defer close(h.feedDone)
			h.feedW.Write(data) // a child that exits unread gives EPIPE: not our error
			h.feedW.Close()
		}(spec.Stdin.Data)
	}
	s.register(h)
	go h.run(func() (*os.ProcessState, error) {
		err := cmd.Wait()
		return cmd.ProcessState, err
	}, spec.Timeout)
	return h, nil
}

// admit counts a spawn in flight unless the Service is closed; done ends the count once the
// new tree is registered, so Close never misses it.
func (s *Service) admit(op, name string) (done func(), err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, &Error{Op: op, Name: name, Kind: ErrClosed}
	}
	s.inflight.Add(1)
	return s.inflight.Done, nil
}

// locate merges the environment, resolves the program against its PATH and checks the
// working directory (empty: the Service's cwd).
func (s *Service) locate(op, name, dir string, extraEnv []string) (path, wd string, env []string, err error) {
	env = mergeEnv(s.env, extraEnv, s.rules)
	if path, err = s.resolve(name, env); err != nil {
		return "", "", nil, err
	}
	if dir == "" {
		return path, s.cwd, env, nil // checked by New; exec reports it if it has gone since
	}
	if fi, err := os.Stat(dir); err != nil {
		return "", "", nil, &Error{Op: op, Name: name, Kind: ErrNotFound, Err: fmt.Errorf("working directory: %w", err)}
	} else if !fi.IsDir() {
		return "", "", nil, invalid(op, "Dir", dir+" is not a directory")
	}
	return path, dir, env, nil
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
	case InputBytes, InputPipe:
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
				h.collectors[i] = newCollector(Stream(i+1).String(), o, h.place)
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

// startError classifies a failed exec.
func startError(name string, err error) error {
	e := &Error{Op: "spawn", Name: name, Err: err}
	var errno syscall.Errno
	switch {
	case errors.Is(err, fs.ErrNotExist):
		e.Kind = ErrNotFound
		e.Hint = "for a script, check that its #! interpreter exists"
	case errors.As(err, &errno) && errno == syscall.ENOEXEC:
		e.Kind = ErrPermission
		e.Hint = "the file is not a program this OS can run; add a #! line to a script"
	case errors.Is(err, fs.ErrPermission):
		e.Kind = ErrPermission
	case errors.As(err, &errno) && (errno == syscall.EMFILE || errno == syscall.ENFILE || errno == syscall.EAGAIN || errno == syscall.ENOMEM):
		e.Hint = "the system is out of processes, memory or file descriptors"
	}
	return e
}
