package coderuntime

import (
	"errors"
	"strconv"
	"strings"

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
	// ErrClosed: the runtime or the session was closed (before or during the run); create a
	// new one.
	ErrClosed = errors.New("runtime is closed")
	// ErrUnsupported: the platform lacks what the feature needs (sessions on Windows). It is
	// subprocess.ErrUnsupported.
	ErrUnsupported = subprocess.ErrUnsupported
)

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
	var b strings.Builder
	b.WriteString("coderuntime: ")
	b.WriteString(string(e.Language))
	b.WriteString(" unavailable: interpreter ")
	b.WriteString(strconv.Quote(e.Interpreter))
	if errors.Is(e.Err, subprocess.ErrPermission) {
		b.WriteString(" cannot be executed (")
		b.WriteString(e.Err.Error())
		b.WriteString("); searched ")
	} else {
		b.WriteString(" not found; searched ")
	}
	if len(e.Searched) == 0 {
		b.WriteString("nothing: PATH has no absolute directory")
	} else {
		b.WriteString(strings.Join(e.Searched, ", "))
	}
	b.WriteString(" (install it, or name it with Config.Interpreters or Request.Interpreter)")
	return b.String()
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
	return "coderuntime: " + e.Field + ": " + e.Kind.Error() + ": " + e.Err.Error()
}

// Unwrap returns the kind and the cause.
func (e *RequestError) Unwrap() []error { return []error{e.Kind, e.Err} }

func invalid(field, msg string) error {
	return &RequestError{Field: field, Kind: ErrInvalid, Err: errors.New(msg)}
}

// Error is any other failure of the runtime itself: making the run's directory, starting the
// interpreter, ending what the code left behind. It wraps the cause (and ErrClosed when the
// runtime was closed).
type Error struct {
	Op       string // "run", "prepare", "spawn", "cleanup", "new", "close"
	Language Language
	Err      error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("coderuntime: ")
	b.WriteString(e.Op)
	if e.Language != "" {
		b.WriteString(" ")
		b.WriteString(string(e.Language))
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }
