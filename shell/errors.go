package shell

import (
	"errors"

	"github.com/subkit/subkit/subprocess"

	"github.com/subkit/subkit/internal/errtext"
)

// Sentinel kinds. Every error of this package wraps one of them (test with errors.Is) and is an
// *Error, a *ConfigError or a *SyntaxError that says where (test with errors.As). Errors of the
// subprocess Service pass through wrapped, so its kinds match too.
var (
	// ErrInvalid: a Config, an argument or a context is wrong; the message names it. It is
	// subprocess.ErrInvalid, so one test covers both layers.
	ErrInvalid = subprocess.ErrInvalid
	// ErrNotFound: bash does not exist, or a Manager has no session with the id given (it
	// was closed or pruned). It is subprocess.ErrNotFound.
	ErrNotFound = subprocess.ErrNotFound
	// ErrUnsupported: the platform has no terminals (Windows). It is subprocess.ErrUnsupported.
	ErrUnsupported = subprocess.ErrUnsupported
	// ErrClosed: the Session or Manager, or the Service it runs on (Config.Service), was
	// closed; open a new one. It is also subprocess.ErrClosed for errors.Is, so one test
	// covers both layers.
	ErrClosed error = &closedError{"session is closed"}
	// ErrBusy: a command is still running in the session; Poll it, Write input to it or
	// Interrupt it before the next Run.
	ErrBusy = errors.New("a command is still running")
	// ErrExited: the shell has ended (exit, a signal, or its terminal went away); nothing can
	// run in this session any more. Open a new one.
	ErrExited = errors.New("the shell has exited")
	// ErrSyntax: the command has a syntax error (found by `bash -n` before anything ran). The
	// error is a *SyntaxError with bash's message.
	ErrSyntax = errors.New("syntax error")
	// ErrStart: the shell started but never became ready (it exited, or printed no prompt
	// marker within Config.StartTimeout).
	ErrStart = errors.New("the shell did not start")
)

// closedError is the package's closed kind: its own message, and subprocess.ErrClosed for
// errors.Is.
type closedError struct{ msg string }

func (e *closedError) Error() string { return e.msg }

// Is reports whether target is subprocess.ErrClosed.
func (e *closedError) Is(target error) bool { return target == subprocess.ErrClosed }

// Error is a failed operation of a Session or a Manager.
type Error struct {
	Op   string // "open", "run", "write", "poll", "interrupt", "read transcript", "close", "get", ...
	ID   string // the session id, for sessions of a Manager; "" otherwise
	Kind error  // one of the sentinel errors above, or nil
	Err  error  // the cause, or nil
	Hint string // what the caller can do about it, when there is something to say
}

// session names the session in the message, when it has an id.
func (e *Error) session() string {
	if e.ID == "" {
		return ""
	}
	return "session " + e.ID
}

func (e *Error) Error() string {
	return errtext.Format("shell", e.Op, e.session(), e.Kind, e.Err, e.Hint)
}

// Unwrap returns the kind and the cause, so errors.Is matches both.
func (e *Error) Unwrap() []error { return errtext.Unwrap(e.Kind, e.Err) }

// ConfigError is a bad Config or ManagerConfig field. It wraps ErrInvalid.
type ConfigError struct {
	Field string // "MaxOutputBytes", "Yield", "MaxSessions", ...
	Err   error  // what is wrong
}

func (e *ConfigError) Error() string {
	return errtext.Format("shell", "config", e.Field, nil, e.Err, "")
}

// Unwrap returns ErrInvalid and the cause.
func (e *ConfigError) Unwrap() []error { return []error{ErrInvalid, e.Err} }

// SyntaxError is a command that `bash -n` refused: nothing of it ran. It wraps ErrSyntax.
type SyntaxError struct {
	Command string
	// Message is what bash said, e.g. "bash: line 1: syntax error near unexpected token `)'".
	Message string
}

func (e *SyntaxError) Error() string {
	return errtext.Format("shell", "run", "", ErrSyntax, errors.New(e.Message), "nothing ran")
}

// Unwrap returns ErrSyntax.
func (e *SyntaxError) Unwrap() error { return ErrSyntax }

func invalid(op, what string) error {
	return &Error{Op: op, Kind: ErrInvalid, Err: errors.New(what)}
}
