package subprocess

import (
	"context"
	"errors"

	"github.com/subkit/subkit/internal/errtext"
	"github.com/subkit/subkit/procinspect"
)

// Sentinel kinds. Every error the Service or a Handle returns is an *Error that says
// what was being done (test with errors.As) and wraps one of these (test with errors.Is), or,
// when a context ended the operation, the context's error.
var (
	// ErrClosed: the Service was closed; create a new one.
	ErrClosed = errors.New("service is closed")
	// ErrNotFound: the executable (or the working directory) does not exist.
	ErrNotFound = errors.New("not found")
	// ErrPermission: the file exists but cannot be executed (no execute bit, not a program the
	// OS can run, or access denied).
	ErrPermission = errors.New("permission denied")
	// ErrInvalid: the Spec or Config is wrong; the message names the field.
	ErrInvalid = errors.New("invalid argument")
	// ErrUnsupported: the platform has no implementation of the requested capability.
	ErrUnsupported = errors.New("not supported on this platform")
	// ErrLimit: a resource ran out: Config.MaxLive, file descriptors (EMFILE, ENFILE),
	// processes (EAGAIN from fork), memory, or the size of the arguments and environment
	// (E2BIG). The hint says which.
	ErrLimit = errors.New("resource limit reached")
	// ErrSystem: the operating system failed the operation for a reason the other kinds do
	// not name (a tree that outlived SIGKILL, an unexpected errno); the message has the cause.
	ErrSystem = errors.New("system error")
)

var sentinels = []error{ErrClosed, ErrNotFound, ErrPermission, ErrInvalid, ErrUnsupported, ErrLimit, ErrSystem}

// Error describes a failed operation of the Service or a Handle.
type Error struct {
	Op   string // what was being done: "spawn", "resolve", "read output", "terminate", ...
	Name string // the program, stream or path concerned, when there is one
	Kind error  // one of the sentinel errors above, or nil
	Err  error  // the underlying cause, or nil
	Hint string // what the caller can do about it, when there is something to say
	// Survivors are the processes a Terminate could not end, by exact identity, when it knows
	// them: a terminal's cleanup (Spec.TTY) names each process it recorded and found alive
	// after SIGKILL (the program itself while it has not exited). The error's kind is then
	// ErrSystem. Nil otherwise.
	Survivors []procinspect.Identity
}

func (e *Error) Error() string {
	return errtext.Format("subprocess", e.Op, e.Name, e.Kind, e.Err, e.Hint)
}

// Unwrap returns the kind and the cause, so errors.Is matches both. An Error whose Kind is nil
// and whose cause wraps neither a sentinel nor a context error has the kind ErrSystem.
func (e *Error) Unwrap() []error { return errtext.Unwrap(e.kind(), e.Err) }

func (e *Error) kind() error {
	if e.Kind != nil {
		return e.Kind
	}
	if errors.Is(e.Err, context.Canceled) || errors.Is(e.Err, context.DeadlineExceeded) {
		return nil
	}
	for _, k := range sentinels {
		if errors.Is(e.Err, k) {
			return nil
		}
	}
	return ErrSystem
}

func invalid(op, name, format string) error {
	return &Error{Op: op, Name: name, Kind: ErrInvalid, Err: errors.New(format)}
}

// kindError is a message that belongs to one of the sentinel kinds.
type kindError struct {
	kind error
	msg  string
}

func (e kindError) Error() string { return e.msg }
func (e kindError) Unwrap() error { return e.kind }
