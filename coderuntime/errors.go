package coderuntime

import (
	"errors"
	"strconv"
	"strings"

	"github.com/subkit/subkit/internal/errtext"
	"github.com/subkit/subkit/subprocess"
)

// Sentinel kinds. Every Go error of this package wraps one of them (test with errors.Is) and
// an *UnavailableError, *RequestError or *Error that says what failed (test with errors.As).
var (
	// ErrRuntimeUnavailable: the interpreter for the language cannot be found or executed.
	// The error is an *UnavailableError that names what was searched.
	ErrRuntimeUnavailable = errors.New("runtime unavailable")
	// ErrUnsupportedLanguage: the runtime does not offer the requested language.
	ErrUnsupportedLanguage = errors.New("unsupported language")
	// ErrInvalid: a Request or Config field is wrong; the error names it. It is
	// subprocess.ErrInvalid, so one test covers both layers.
	ErrInvalid = subprocess.ErrInvalid
	// ErrClosed: the runtime or the session was closed (before or during the run), or the
	// Service it runs on was; create a new one. errors.Is(err, subprocess.ErrClosed) holds
	// for it too, so one test covers every closed adapter and a closed Service.
	ErrClosed error = closedError("runtime is closed")
	// ErrUnsupported: the platform lacks what the feature needs (sessions on Windows). It is
	// subprocess.ErrUnsupported.
	ErrUnsupported = subprocess.ErrUnsupported
)

// closedError is ErrClosed's type: its own message, and subprocess.ErrClosed's kind.
type closedError string

func (e closedError) Error() string { return string(e) }

// Is reports whether target is subprocess.ErrClosed.
func (e closedError) Is(target error) bool { return target == subprocess.ErrClosed }

// UnavailableError says that a language's interpreter cannot be used. It wraps
// ErrRuntimeUnavailable and the resolution failure.
type UnavailableError struct {
	Language Language
	// Interpreter is the name or path that was looked for.
	Interpreter string
	// Searched lists where it was looked for: the directories of the runtime's PATH for a
	// bare name, or the one path checked.
	Searched []string
	// Err is the underlying failure (subprocess.ErrNotFound or ErrPermission).
	Err error
}

func (e *UnavailableError) Error() string {
	var why strings.Builder
	why.WriteString("interpreter ")
	why.WriteString(strconv.Quote(e.Interpreter))
	if errors.Is(e.Err, subprocess.ErrPermission) {
		why.WriteString(" cannot be executed (")
		why.WriteString(e.Err.Error())
		why.WriteString("); searched ")
	} else {
		why.WriteString(" not found; searched ")
	}
	if len(e.Searched) == 0 {
		why.WriteString("nothing: PATH has no absolute directory")
	} else {
		why.WriteString(strings.Join(e.Searched, ", "))
	}
	return errtext.Format("coderuntime", "run", string(e.Language), ErrRuntimeUnavailable, errors.New(why.String()),
		"install it, or name it with Config.Interpreters or Request.Interpreter")
}

// Unwrap returns ErrRuntimeUnavailable and the cause.
func (e *UnavailableError) Unwrap() []error {
	return []error{ErrRuntimeUnavailable, e.Err}
}

// RequestError is a bad Request or Config field. It wraps ErrInvalid, or
// ErrUnsupportedLanguage for the Language field.
type RequestError struct {
	// Field is the Request or Config field concerned: "Language", "Timeout", "Env", ...
	Field string
	// Kind is ErrInvalid or ErrUnsupportedLanguage.
	Kind error
	// Err says what is wrong.
	Err error
}

func (e *RequestError) Error() string {
	return errtext.Format("coderuntime", "check", e.Field, e.Kind, e.Err, "")
}

// Unwrap returns the kind and the cause.
func (e *RequestError) Unwrap() []error { return errtext.Unwrap(e.Kind, e.Err) }

func invalid(field, msg string) error {
	return &RequestError{Field: field, Kind: ErrInvalid, Err: errors.New(msg)}
}

// Error is any other failure of the runtime itself: making the run's directory, starting the
// interpreter, ending what the code left behind. It wraps its kind (ErrClosed when the
// runtime, the session or the Service was closed; ErrUnsupported) and the cause.
type Error struct {
	Op       string   // "run", "prepare", "spawn", "cleanup", "new", "new session", "close", ...
	Language Language // the language concerned, or ""
	Kind     error    // ErrClosed, ErrUnsupported, or nil
	Err      error    // the cause, or nil
	Hint     string   // what the caller can do about it, when there is something to say
}

func (e *Error) Error() string {
	return errtext.Format("coderuntime", e.Op, string(e.Language), e.Kind, e.Err, e.Hint)
}

// Unwrap returns the kind and the cause, so errors.Is matches both.
func (e *Error) Unwrap() []error { return errtext.Unwrap(e.Kind, e.Err) }

// closed is the *Error of op on a closed runtime or session; err is what else went wrong, or
// nil.
func closed(op string, l Language, err error) *Error {
	return &Error{Op: op, Language: l, Kind: ErrClosed, Err: err}
}
