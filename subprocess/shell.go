package subprocess

import (
	"errors"

	"github.com/subkit/subkit/internal/posixsh"
)

// ShellCommand starts the kit's own shell where no bash is installed (Windows without Git
// Bash): the interpreter of bash's syntax of mvdan.cc/sh, run by the kit's helper executable.
// A Spec runs it with Path, Env added to its own Env, and bash's arguments after (-c SCRIPT
// [NAME [ARG...]], or a script file). The programs the script runs are the helper's children,
// so the tree, its tails, Timeout and Terminate work as for bash. It has bash's syntax and
// builtins but no utilities of its own (ls, grep, sed run where the machine has them on PATH);
// see internal/posixsh for what it lacks.
type ShellCommand struct {
	// Path is the helper executable: Config.Helper, or this binary after HelperMain.
	Path string
	// Env selects the helper's shell role; the shell removes it from its own environment, so
	// the script's programs do not inherit it.
	Env []string
}

// Shell returns how to start the kit's own shell on this Service. Without a helper executable
// (no Config.Helper, and HelperMain was not called) it fails with ErrInvalid and says how to
// enable one.
func (s *Service) Shell() (ShellCommand, error) {
	if err := s.valid("shell"); err != nil {
		return ShellCommand{}, err
	}
	path, err := helperPath(s.helper, "Service.Shell")
	if err != nil {
		if e := (*Error)(nil); errors.As(err, &e) {
			e.Op = "shell"
		}
		return ShellCommand{}, err
	}
	return ShellCommand{Path: path, Env: []string{helperRoleVar + "=" + posixsh.Role}}, nil
}
