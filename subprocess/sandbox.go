package subprocess

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/subkit/subkit/sandbox"
)

// sandboxes is the Service's probe of this machine's confinement, made once: at New for
// Config.Sandbox, else at the first Spec that asks for one.
type sandboxes struct {
	once sync.Once
	sb   *sandbox.Sandbox
	err  error

	tmpOnce sync.Once // the private temp dir of sandboxed programs, under the runtime root
	tmp     string
	tmpErr  error
}

// get is the probe, made the first time with the helper binary of Config.Helper (see helperPath).
func (x *sandboxes) get(configHelper string) (*sandbox.Sandbox, error) {
	x.once.Do(func() {
		helper, err := helperPath(configHelper, "Config.Sandbox")
		if err != nil {
			x.err = err
			return
		}
		x.sb, x.err = sandbox.New(helper)
	})
	return x.sb, x.err
}

// confined is what starts a program: itself, or under a sandbox the helper that confines it.
type confined struct {
	path       string
	args, env  []string
	cloneflags uintptr // namespaces to start path in (sandbox.Launch.Cloneflags)
	setsid     bool    // path starts in a session of its own (sandbox.Launch.Setsid)
	report     *sandbox.Report
	proxy      *allowProxy // the allow-list's proxy (sandbox.NetworkAllowList), or nil
}

// abandon stops what confine started for a program that did not start.
func (c confined) abandon(s *Service) {
	if c.proxy != nil {
		c.proxy.end(s.log, c.report)
	}
}

// confine turns the program a spawn would start into what starts it under pol (the Spec's, else
// Config.Sandbox; none: the program as it is) and says how it is confined. terminal: the
// program gets a pty as its controlling terminal.
func (s *Service) confine(op string, pol *sandbox.Policy, path string, argv, env []string, dir string, terminal bool, readable []string) (confined, error) {
	if pol == nil {
		pol = s.sandboxPolicy
	}
	if pol == nil {
		return confined{path: path, args: argv, env: env}, nil
	}
	sb, err := s.sandboxes.get(s.helper)
	if err != nil {
		return confined{}, sandboxError(op, path, err)
	}
	tmp, err := s.sandboxTemp()
	if err != nil {
		return confined{}, &Error{Op: op, Name: path, Kind: ErrSystem, Err: fmt.Errorf("sandbox temp dir: %w", err)}
	}
	prog := sandbox.Program{Path: path, Args: argv, Env: env, Dir: dir, TempDir: tmp, Home: homeOf(env), Terminal: terminal, Readable: readable}
	var proxy *allowProxy
	if pol.Network == sandbox.NetworkAllowList {
		if proxy, err = s.startProxy(op, path, pol); err != nil {
			return confined{}, err
		}
		prog.Proxy = proxy.sock
	}
	l, err := sb.Prepare(pol, prog)
	if err != nil {
		if proxy != nil {
			proxy.end(s.log, &sandbox.Report{})
		}
		return confined{}, sandboxError(op, path, err)
	}
	report := l.Report
	return confined{path: l.Path, args: l.Args, env: l.Env, cloneflags: l.Cloneflags, setsid: l.Setsid, report: &report, proxy: proxy}, nil
}

// sandboxTemp is the private temp dir (TMPDIR) of the Service's sandboxed programs, made in the
// runtime root when first needed.
func (s *Service) sandboxTemp() (string, error) {
	x := &s.sandboxes
	x.tmpOnce.Do(func() {
		x.tmp = filepath.Join(s.root, "sandbox-tmp")
		x.tmpErr = os.Mkdir(x.tmp, 0o700)
	})
	return x.tmp, x.tmpErr
}

// homeOf is the home directory "~/" stands for in a policy: the program's HOME, else this
// user's.
func homeOf(env []string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], "HOME="); ok && v != "" {
			return v
		}
	}
	home, _ := os.UserHomeDir()
	return home
}

// sandboxError maps the sandbox package's kinds onto the Service's.
func sandboxError(op, name string, err error) error {
	var e *Error
	if errors.As(err, &e) {
		return err // the helper's own (no helper executable)
	}
	kind := ErrSystem
	switch {
	case errors.Is(err, sandbox.ErrInvalid):
		kind = ErrInvalid
	case errors.Is(err, sandbox.ErrNotFound):
		kind = ErrNotFound
	case errors.Is(err, sandbox.ErrUnsupported):
		kind = ErrUnsupported
	}
	return &Error{Op: op, Name: name, Kind: kind, Err: err}
}
