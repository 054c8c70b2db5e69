package subprocess

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/subkit/subkit/procinspect"

	"github.com/subkit/subkit/sandbox"
)

// Default terminal size.
const (
	DefaultCols = 80
	DefaultRows = 24
)

// TerminalSpec describes a program to run on a terminal of its own (a pty). The program
// becomes a session leader with the terminal as its controlling terminal. Environment and
// executable resolution follow the same rules as Spec.
type TerminalSpec struct {
	Path string   // program, resolved as Spec.Path
	Args []string // arguments after argv[0]
	Dir  string   // working directory; empty means the Service's Cwd
	Env  []string // NAME=VALUE merged over the scrubbed environment
	// Cols and Rows are the terminal size; 0 means DefaultCols x DefaultRows.
	Cols, Rows int
	// TailBytes is how much screen output is kept for ReadOutput; 0 means DefaultTailBytes.
	// At most MaxTailBytes.
	TailBytes int
	// Grace is how long Terminate waits between asking and forcing, and how long output may
	// drain after the program exits; 0 means DefaultGrace.
	Grace time.Duration
	// Sandbox confines the program as Spec.Sandbox does; nil means Config.Sandbox. The pty is
	// opened by the Service before the program is confined, and stays usable inside.
	Sandbox *sandbox.Policy
	// Readable is Spec.Readable: files the confined program must read in a private place.
	Readable []string
}

func (s *TerminalSpec) check() error {
	if err := checkArgs("spawn terminal", s.Args); err != nil {
		return err
	}
	switch {
	case s.Path == "":
		return invalid("spawn terminal", "Path", "no program given")
	case s.Cols < 0 || s.Rows < 0 || s.Cols > 0xffff || s.Rows > 0xffff:
		return invalid("spawn terminal", "Cols/Rows", fmt.Sprintf("size %dx%d is out of range 0..65535", s.Cols, s.Rows))
	case s.TailBytes < 0:
		return invalid("spawn terminal", "TailBytes", fmt.Sprintf("%d is negative; use 0 for the default", s.TailBytes))
	case s.TailBytes > MaxTailBytes:
		return invalid("spawn terminal", "TailBytes", fmt.Sprintf("%d is above MaxTailBytes (%d)", s.TailBytes, MaxTailBytes))
	case s.Grace < 0:
		return invalid("spawn terminal", "Grace", fmt.Sprintf("%v is negative; use 0 for the default", s.Grace))
	}
	return checkEnv(s.Env)
}

// TerminalResult is how the top program of a terminal ended.
type TerminalResult struct {
	Pid      int
	ExitCode int    // -1 when a signal ended it or the status is unknown
	Signal   string // "SIGHUP", "SIGKILL", ... or ""
	ExitErr  error  // why the exit status is unknown, or nil
	Duration time.Duration
}

// Foreground is the terminal's foreground process group at one moment.
type Foreground struct {
	Pgid int
	// Procs are the group's live members within the tree rooted at the terminal's program,
	// as exact identities.
	Procs []procinspect.Proc
}

// TerminateError reports the processes a terminal's Terminate could not end.
type TerminateError struct {
	Survivors []procinspect.Identity
}

func (e *TerminateError) Error() string {
	ids := make([]string, len(e.Survivors))
	for i, id := range e.Survivors {
		ids[i] = id.String()
	}
	return fmt.Sprintf("subprocess: terminate terminal: %d processes survived SIGKILL: %s", len(ids), strings.Join(ids, ", "))
}

// SpawnTerminal starts spec's program on a new pty. It fails with ErrUnsupported where the
// platform has no terminals (see docs/platform.md).
func (s *Service) SpawnTerminal(ctx context.Context, spec TerminalSpec) (*Terminal, error) {
	if err := s.valid("spawn terminal"); err != nil {
		return nil, err
	}
	if err := checkCtx("spawn terminal", spec.Path, ctx); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, &Error{Op: "spawn terminal", Name: spec.Path, Err: err}
	}
	if err := spec.check(); err != nil {
		return nil, err
	}
	if capTerminals == levelUnsupported {
		return nil, &Error{Op: "spawn terminal", Name: spec.Path, Kind: ErrUnsupported,
			Err: fmt.Errorf("no terminals on %s", platformName)}
	}
	done, err := s.admit("spawn terminal", spec.Path)
	if err != nil {
		return nil, err
	}
	defer done()
	path, dir, env, err := s.locate("spawn terminal", spec.Path, spec.Dir, spec.Env)
	if err != nil {
		return nil, err
	}
	if spec.Cols == 0 {
		spec.Cols = DefaultCols
	}
	if spec.Rows == 0 {
		spec.Rows = DefaultRows
	}
	if spec.Grace == 0 {
		spec.Grace = DefaultGrace
	}
	t, err := startTerminal(s, path, dir, env, spec)
	if err != nil {
		return nil, err
	}
	s.register(t)
	return t, nil
}
