package bash

import (
	"errors"
	"strconv"
	"strings"

	"github.com/subkit/subkit/subprocess"

	"github.com/subkit/subkit/internal/errtext"
)

// Sentinel kinds. Every error of this package wraps one of them (test with errors.Is), and a
// *ConfigError, *RequestError or *Error that says where (test with errors.As). Errors of the
// subprocess Service pass through wrapped, so its kinds match too.
var (
	// ErrInvalid: a Config, config file or Request is wrong; the error names the key or field.
	// It is subprocess.ErrInvalid, so one test covers both layers.
	ErrInvalid = subprocess.ErrInvalid
	// ErrNotFound: bash (or the working directory) does not exist. It is subprocess.ErrNotFound.
	ErrNotFound = subprocess.ErrNotFound
	// ErrPermission: bash exists but cannot be executed. It is subprocess.ErrPermission.
	ErrPermission = subprocess.ErrPermission
	// ErrClosed: the Executor, or the Service it runs on (Config.Service), was closed;
	// create a new one. It is also subprocess.ErrClosed for errors.Is, so one test covers
	// both layers.
	ErrClosed error = &closedError{"executor is closed"}
	// ErrTooMany: Config.MaxBackground background processes are already running.
	ErrTooMany = errors.New("too many background processes")
	// ErrUnsupported: the platform lacks a capability this package needs. It is
	// subprocess.ErrUnsupported.
	ErrUnsupported = subprocess.ErrUnsupported
)

// closedError is the package's closed kind: its own message, and subprocess.ErrClosed for
// errors.Is.
type closedError struct{ msg string }

func (e *closedError) Error() string { return e.msg }

// Is reports whether target is subprocess.ErrClosed.
func (e *closedError) Is(target error) bool { return target == subprocess.ErrClosed }

// ConfigError is a bad configuration value. It wraps ErrInvalid.
type ConfigError struct {
	// Key is the configuration key as spelled in a config file ("timeoutMs"), or "" for a
	// file that is not a valid JSON or YAML mapping at all.
	Key string
	// Field is the Config field the key sets ("Timeout"), or "" for an unknown key.
	Field string
	// Line is the 1-based line of the key in the file it was parsed from, or 0.
	Line int
	// Err says what is wrong.
	Err error
}

func (e *ConfigError) Error() string {
	var where strings.Builder
	if e.Key != "" {
		where.WriteString("key " + e.Key)
		if e.Field != "" {
			where.WriteString(" (Config." + e.Field + ")")
		}
	}
	if e.Line > 0 {
		if where.Len() > 0 {
			where.WriteString(" ")
		}
		where.WriteString("at line " + strconv.Itoa(e.Line))
	}
	return errtext.Format("bash", "config", where.String(), nil, e.Err, "")
}

// Unwrap returns ErrInvalid and the cause.
func (e *ConfigError) Unwrap() []error { return []error{ErrInvalid, e.Err} }

// RequestError is a bad Request. It wraps ErrInvalid (or ErrTooMany, for the running cap).
type RequestError struct {
	// Field is the Request field concerned: "Command", "Timeout", "StdoutMaxBytes", "Env",
	// "ManagedEnv" or "Dir"; for ReadOutput and WaitOutput, the offset that is wrong, "Offsets.Stdout"
	// or "Offsets.Stderr" (beyond the end of its stream, or negative), or "ctx" for a nil
	// context.
	Field string
	// Key is the variable name for Env and ManagedEnv errors, or "".
	Key string
	// Err says what is wrong.
	Err error
}

func (e *RequestError) Error() string {
	name := e.Field
	if e.Key != "" {
		name += "[" + strconv.Quote(e.Key) + "]"
	}
	return errtext.Format("bash", "request", name, nil, e.Err, "")
}

// Unwrap returns ErrInvalid and the cause.
func (e *RequestError) Unwrap() []error { return []error{ErrInvalid, e.Err} }

// Error is a failed operation of an Executor or a Process.
type Error struct {
	Op   string // "new", "exec", "start", "wait", "terminate", "close", "sweep", "load config"
	Name string // the path or process concerned, when there is one
	Kind error  // one of the sentinel errors above, or nil
	Err  error  // the cause, or nil
	Hint string // what the caller can do about it, when there is something to say
}

func (e *Error) Error() string {
	return errtext.Format("bash", e.Op, e.Name, e.Kind, e.Err, e.Hint)
}

// Unwrap returns the kind and the cause, so errors.Is matches both.
func (e *Error) Unwrap() []error { return errtext.Unwrap(e.Kind, e.Err) }
