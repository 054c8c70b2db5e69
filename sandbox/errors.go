package sandbox

import (
	"errors"
	"fmt"

	"github.com/subkit/subkit/internal/errtext"
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
	return errtext.Format("sandbox", e.Op, e.Name, e.Kind, e.Err, e.Hint)
}

// Unwrap returns the kind and the cause, so errors.Is matches both.
func (e *Error) Unwrap() []error { return errtext.Unwrap(e.Kind, e.Err) }

func invalid(op, name, format string, args ...any) error {
	return &Error{Op: op, Name: name, Kind: ErrInvalid, Err: fmt.Errorf(format, args...)}
}
