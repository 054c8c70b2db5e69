package bash

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/subkit/subkit/subprocess"

	"github.com/subkit/subkit/internal/modelenv"
)

// Request is one command.
type Request struct {
	// Command is bash source, run as `bash -c Command` by a fresh non-login, non-interactive
	// shell that reads no startup file.
	Command string
	// Timeout bounds a foreground command (Exec): 0 means Config.Timeout, and a value above
	// Config.MaxTimeout is lowered to it (Result.Timeout says what applied). When it expires
	// the whole process group is terminated. Background commands (Start) have no timeout and
	// refuse one.
	Timeout time.Duration
	// StdoutMaxBytes raises this foreground call's in-memory stdout budget above
	// Config.MaxOutputBytes, up to Config.MaxSpillBytes, for a caller that needs more of the
	// output inline. A smaller value does not lower it. Stderr, and every background command,
	// keep Config.MaxOutputBytes.
	StdoutMaxBytes int
	// Env is set in the command's environment after the scrub and the model-friendly
	// defaults, so it may override those. Names with the managed prefix are refused: pass
	// them in ManagedEnv.
	Env map[string]string
	// ManagedEnv carries the harness's own variables (the managed prefix, DSH_ by default)
	// and accepts nothing else. It is merged last.
	ManagedEnv map[string]string
	// Stdin, when not nil, is written to the command's standard input, which is then closed.
	// When nil, standard input is the null device: a command never waits for input.
	Stdin []byte
	// Dir is the directory the command starts in: "" for Config.Cwd. A relative Dir is taken
	// relative to Config.Cwd (not to the host process's working directory). It must be an
	// existing directory; anything else is a *RequestError with Field "Dir".
	Dir string
}

// spec turns a request into a Spec. It returns the foreground timeout that applies.
func (e *Executor) spec(req Request, background bool) (subprocess.Spec, time.Duration, error) {
	c := &e.cfg
	bad := func(field string, format string, args ...any) error {
		return &RequestError{Field: field, Err: fmt.Errorf(format, args...)}
	}
	switch {
	case strings.TrimSpace(req.Command) == "":
		return subprocess.Spec{}, 0, bad("Command", "no command given")
	case strings.ContainsRune(req.Command, 0):
		return subprocess.Spec{}, 0, bad("Command", "contains a NUL byte, which cannot be passed to bash")
	case req.Timeout < 0:
		return subprocess.Spec{}, 0, bad("Timeout", "%v is negative; use 0 for the default %v", req.Timeout, c.Timeout)
	case req.StdoutMaxBytes < 0:
		return subprocess.Spec{}, 0, bad("StdoutMaxBytes", "%d is negative; use 0 for maxOutputBytes", req.StdoutMaxBytes)
	case int64(req.StdoutMaxBytes) > c.MaxSpillBytes:
		return subprocess.Spec{}, 0, bad("StdoutMaxBytes", "%d is above maxSpillBytes %d", req.StdoutMaxBytes, c.MaxSpillBytes)
	case background && req.Timeout != 0:
		return subprocess.Spec{}, 0, bad("Timeout", "background commands have no timeout; end one with Process.Terminate")
	case background && req.StdoutMaxBytes != 0:
		return subprocess.Spec{}, 0, bad("StdoutMaxBytes", "applies to foreground commands only; background output is read by offset")
	}
	env, err := e.env(req)
	if err != nil {
		return subprocess.Spec{}, 0, err
	}
	dir, err := e.dir(req.Dir)
	if err != nil {
		return subprocess.Spec{}, 0, err
	}
	timeout := time.Duration(0)
	if !background {
		timeout = req.Timeout
		if timeout == 0 {
			timeout = c.Timeout
		}
		timeout = min(timeout, c.MaxTimeout)
	}
	stdoutTail := c.MaxOutputBytes
	if !background {
		stdoutTail = max(stdoutTail, req.StdoutMaxBytes)
	}
	spec := subprocess.Spec{
		Path: e.shell.Path, Args: []string{"-c", req.Command},
		Dir: dir, Env: env, Grace: c.Grace, DrainGrace: c.DrainGrace, Timeout: timeout,
		Stdout: subprocess.Output{TailBytes: stdoutTail, SpillBytes: c.MaxSpillBytes},
		Stderr: subprocess.Output{TailBytes: c.MaxOutputBytes, SpillBytes: c.MaxSpillBytes},
	}
	if req.Stdin != nil {
		spec.Stdin = subprocess.Input{Kind: subprocess.InputBytes, Data: req.Stdin}
	}
	if !e.owned {
		// A shared Service's environment still has the host's startup variables, its spill
		// directory is not under the executor's retention, and its sandbox is not ours.
		spec.Env = append(modelenv.EmptyStartup(), env...)
		spec.SpillDir = e.store.dir
		spec.Sandbox = c.Sandbox
	}
	spec.Env = append(spec.Env, e.shell.Env...)
	return spec, timeout, nil
}

// dir resolves a request's Dir against Config.Cwd and checks that it is a directory.
func (e *Executor) dir(d string) (string, error) {
	if d == "" {
		return e.cfg.Cwd, nil
	}
	bad := func(format string, args ...any) error {
		return &RequestError{Field: "Dir", Err: fmt.Errorf(format, args...)}
	}
	if strings.ContainsRune(d, 0) {
		return "", bad("contains a NUL byte, which no path can hold")
	}
	if !filepath.IsAbs(d) {
		d = filepath.Join(e.cfg.Cwd, d)
	}
	fi, err := os.Stat(d)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", bad("%s does not exist; give an existing directory, absolute or relative to %s", d, e.cfg.Cwd)
	case err != nil:
		return "", bad("%s cannot be used: %v", d, err)
	case !fi.IsDir():
		return "", bad("%s is not a directory; give the directory to start in", d)
	}
	return filepath.Clean(d), nil
}

// env builds the explicit part of a command's environment: the model-friendly defaults, the
// request's plain env, then its managed env (later entries win in the Service's merge).
func (e *Executor) env(req Request) ([]string, error) {
	prefix := e.cfg.ManagedPrefix
	out := modelenv.Pipes()
	for _, set := range []struct {
		field   string
		vars    map[string]string
		managed bool
	}{{"Env", req.Env, false}, {"ManagedEnv", req.ManagedEnv, true}} {
		names := make([]string, 0, len(set.vars))
		for name := range set.vars {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			value := set.vars[name]
			var err error
			switch {
			case checkName(name) != nil:
				err = checkName(name)
			case strings.ContainsRune(value, 0):
				err = errors.New("the value contains a NUL byte")
			case !set.managed && strings.HasPrefix(name, prefix):
				err = fmt.Errorf("names with the managed prefix %s belong in ManagedEnv", prefix)
			case set.managed && !strings.HasPrefix(name, prefix):
				err = fmt.Errorf("ManagedEnv accepts only names with the managed prefix %s; put it in Env", prefix)
			}
			if err != nil {
				return nil, &RequestError{Field: set.field, Key: name, Err: err}
			}
			out = append(out, name+"="+value)
		}
	}
	return out, nil
}
