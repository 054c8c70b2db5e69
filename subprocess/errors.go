package subprocess

import (
	"errors"
	"strings"
)

// Sentinel kinds. Every error the Service returns wraps one of these (test with errors.Is) and
// an *Error that says what was being done (test with errors.As).
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
)

// Error describes a failed operation of the Service or a Handle.
type Error struct {
	Op   string // what was being done: "spawn", "resolve", "read output", "terminate", ...
	Name string // the program, stream or path concerned, when there is one
	Kind error  // one of the sentinel errors above, or nil
	Err  error  // the underlying cause, or nil
	Hint string // what the caller can do about it, when there is something to say
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("subprocess: ")
	b.WriteString(e.Op)
	if e.Name != "" {
		b.WriteString(" ")
		b.WriteString(e.Name)
	}
	if e.Kind != nil {
		b.WriteString(": ")
		b.WriteString(e.Kind.Error())
	}
	if e.Err != nil && (e.Kind == nil || e.Err.Error() != e.Kind.Error()) {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Hint != "" {
		b.WriteString(" (")
		b.WriteString(e.Hint)
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns the kind and the cause, so errors.Is matches both.
func (e *Error) Unwrap() []error {
	var errs []error
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
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
