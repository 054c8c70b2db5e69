package modelenv

import (
	"os"
	"slices"
	"strings"

	"github.com/subkit/subkit/subprocess"
)

// common is set for pipes and terminals alike.
var common = []string{
	"NO_COLOR=1", "PAGER=cat", "GIT_PAGER=cat", "GH_PAGER=cat", "GIT_TERMINAL_PROMPT=0",
	"PYTHONUNBUFFERED=1",
}

// Pipes is the model environment of a command whose output goes to pipes: TERM=dumb, and
// GIT_EDITOR=true so that git takes its default message instead of waiting on an editor.
// Each call returns a new slice.
func Pipes() []string {
	return append(slices.Clone(common), "TERM=dumb", "GIT_EDITOR=true")
}

// NoEditor is the editor git gets on a terminal: it fails, saying what to do instead, so
// that a git command that wanted one (commit without -m, rebase -i, merge) stops with a
// message rather than waiting on an editor or, with GIT_EDITOR=true, succeeding without doing
// what was asked. git runs it as `sh -c 'EDITOR "$@"' EDITOR FILE`: false takes the
// arguments.
const NoEditor = `printf '%s\n' "subkit: no interactive editor in this session (git wanted one to edit $1)." ` +
	`"Give the text on the command line instead: git commit -m MSG, git merge --no-edit, git tag -m MSG; ` +
	`for git rebase -i set GIT_SEQUENCE_EDITOR to a command that edits the todo file, e.g. GIT_SEQUENCE_EDITOR='sed -i 2s/^pick/squash/'." >&2; false`

// Terminal is the model environment of a shell on a terminal: TERM=xterm-256color (full-screen
// programs draw a screen the session renders), GIT_EDITOR and GIT_SEQUENCE_EDITOR set to
// NoEditor, and BASH_SILENCE_DEPRECATION_WARNING=1 (macOS's bash would otherwise print a
// notice at every start). Each call returns a new slice.
func Terminal() []string {
	return append(slices.Clone(common), "TERM=xterm-256color", "GIT_EDITOR="+NoEditor,
		"GIT_SEQUENCE_EDITOR="+NoEditor, "BASH_SILENCE_DEPRECATION_WARNING=1")
}

// StartupVars are the variables that make a bash read a file or change its options before
// the command. Each call returns a new slice.
func StartupVars() []string { return []string{"BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS"} }

// IsStartupVar reports whether name is one of StartupVars.
func IsStartupVar(name string) bool { return slices.Contains(StartupVars(), name) }

// WithoutStartup returns a copy of env (NAME=VALUE entries) without the startup variables;
// never nil.
func WithoutStartup(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !IsStartupVar(name) {
			out = append(out, kv)
		}
	}
	return out
}

// EmptyStartup sets every startup variable empty (bash then reads no file and sets no
// option): the first entries of a Spec's Env on a Service whose environment may carry them,
// so that later entries (a caller's own values) still win.
func EmptyStartup() []string {
	vars := StartupVars()
	for i, name := range vars {
		vars[i] = name + "="
	}
	return vars
}

// ServiceConfig returns cfg as an adapter makes its own Service: the base environment (cfg.Env,
// or os.Environ() when nil) without the startup variables. The rest is cfg's.
func ServiceConfig(cfg subprocess.Config) subprocess.Config {
	env := cfg.Env
	if env == nil {
		env = os.Environ()
	}
	cfg.Env = WithoutStartup(env)
	return cfg
}

// NewService makes the Service of an adapter whose caller gives none:
// subprocess.New(ServiceConfig(cfg)). The adapter owns it and closes it.
func NewService(cfg subprocess.Config) (*subprocess.Service, error) {
	return subprocess.New(ServiceConfig(cfg))
}
