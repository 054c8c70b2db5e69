package sandbox

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel kinds. Every error of New, NewContext and Prepare is an *Error that says what was
// being done (test with errors.As) and wraps one of these (test with errors.Is), or, when a
// context ended the probe, the context's error.
var (
	// ErrInvalid: the Policy or the Program is wrong; the message names the field.
	ErrInvalid = errors.New("invalid argument")
	// ErrNotFound: a path the Policy or the Program names does not exist (a writable root, the
	// working directory, the program, the helper).
	ErrNotFound = errors.New("not found")
	// ErrUnsupported: no backend can confine a program on this machine (or not the one the
	// Policy asks for); the message says what is missing. It wraps errors.ErrUnsupported.
	ErrUnsupported = fmt.Errorf("confinement not available: %w", errors.ErrUnsupported)
	// ErrSystem: the operating system failed a call for a reason the other kinds do not name;
	// the message has the cause.
	ErrSystem = errors.New("system error")
)

// Error describes a failed operation of the package.
type Error struct {
	Op   string // what was being done: "new", "prepare", "probe"
	Name string // the field, path or backend concerned, when there is one
	Kind error  // one of the sentinel errors above
	Err  error  // the underlying cause, or nil
	Hint string // what the caller can do about it, when there is something to say
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("sandbox: ")
	b.WriteString(e.Op)
	if e.Name != "" {
		b.WriteString(" ")
		b.WriteString(e.Name)
	}
	if e.Kind != nil {
		b.WriteString(": ")
		b.WriteString(e.Kind.Error())
	}
	if e.Err != nil {
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

func invalid(op, name, format string, args ...any) error {
	return &Error{Op: op, Name: name, Kind: ErrInvalid, Err: fmt.Errorf(format, args...)}
}
