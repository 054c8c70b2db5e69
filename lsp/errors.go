package lsp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/subkit/subkit/internal/errtext"
	"github.com/subkit/subkit/internal/framing"
	"github.com/subkit/subkit/subprocess"
)

// Sentinel kinds. An error of this package says what failed (an *Error, a *ServerExitError,
// a *ConnError, a *RPCError, ...; test with errors.As) and wraps one of these or of
// subprocess's kinds (test with errors.Is).
var (
	// ErrClosed: the Client was shut down (Shutdown or Close), or the Pool was; start a new
	// one. errors.Is(err, subprocess.ErrClosed) holds for it too, so one test covers every
	// closed adapter and a closed Service.
	ErrClosed error = closedError("client is shut down")
	// ErrServerExited is wrapped by every *ServerExitError.
	ErrServerExited = errors.New("server exited")
	// ErrFrameTooLarge: the server sent a frame over Config.MaxFrameBytes. The connection
	// fails with a *ConnError wrapping a *FrameTooLargeError.
	ErrFrameTooLarge = framing.ErrTooLarge
	// ErrMalformedFrame: the server wrote bytes to stdout that are not a Content-Length frame
	// (a log line, a bad header, a frame cut short). The connection fails with a *ConnError.
	ErrMalformedFrame = framing.ErrMalformed
)

// closedError is ErrClosed's type: its own message, and subprocess.ErrClosed's kind.
type closedError string

func (e closedError) Error() string { return string(e) }

// Is reports whether target is subprocess.ErrClosed.
func (e closedError) Is(target error) bool { return target == subprocess.ErrClosed }

// Error is a failed operation of a Client, a Pool or a Server: what was being done (Op), to
// what (Name: a URI, a path, a server), its kind (a sentinel of this package or of
// subprocess, or nil), the cause, and what to do about it (Hint).
type Error struct {
	Op   string // "open", "change", "diagnostics", "start", "textDocument/hover", ...
	Name string // the URI, path, server or key concerned, when there is one
	Kind error  // ErrNotOpen, ErrClosed, subprocess.ErrInvalid, ..., or nil
	Err  error  // the cause, or nil
	Hint string // what the caller can do about it, when there is something to say
}

func (e *Error) Error() string {
	return errtext.Format("lsp", e.Op, e.Name, e.Kind, e.Err, e.Hint)
}

// Unwrap returns the kind and the cause, so errors.Is matches both.
func (e *Error) Unwrap() []error { return errtext.Unwrap(e.Kind, e.Err) }

// newError is an *Error of op on name, of kind, caused by err.
func newError(op, name string, kind, err error) *Error {
	return &Error{Op: op, Name: name, Kind: kind, Err: err}
}

// invalidArg is an *Error of kind subprocess.ErrInvalid saying what is wrong with an argument.
func invalidArg(op, name, msg string) *Error {
	return &Error{Op: op, Name: name, Kind: subprocess.ErrInvalid, Err: errors.New(msg)}
}

// ctxError is the *Error of an operation cut short by ctx: it wraps ctx's error.
func ctxError(op, name string, err error) *Error {
	return &Error{Op: op, Name: name, Err: err}
}

// FrameTooLargeError is the frame that broke the cap: its announced size and the cap.
type FrameTooLargeError = framing.TooLargeError

// JSON-RPC and LSP error codes.
const (
	CodeParseError           = -32700
	CodeInvalidRequest       = -32600
	CodeMethodNotFound       = -32601
	CodeInvalidParams        = -32602
	CodeInternalError        = -32603
	CodeServerNotInitialized = -32002
	CodeUnknownErrorCode     = -32001
	CodeRequestFailed        = -32803
	CodeServerCancelled      = -32802
	CodeContentModified      = -32801
	CodeRequestCancelled     = -32800
)

// RPCError is a JSON-RPC error object: what the server answered a Call with, or what a
// RequestHandler returns to answer the server with a specific code.
type RPCError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
	// Method is the request that failed (set on errors returned by Call).
	Method string `json:"-"`
}

func (e *RPCError) Error() string {
	cause := fmt.Errorf("error %d: %s", e.Code, e.Message)
	if e.Method != "" {
		return errtext.Format("lsp", e.Method, "", nil, fmt.Errorf("server %w", cause), "")
	}
	return errtext.Format("lsp", "answer", "", nil, cause, "")
}

// ServerExitError is how the server ended when it ended on its own (a crash, an exit nobody
// asked for) or was terminated because its connection failed (Cause is then set). Every
// call pending at that moment fails with it, and Client.Err returns it.
type ServerExitError struct {
	Server   string // the program, as given in Config.Path
	Pid      int
	ExitCode int    // -1 when a signal ended it
	Signal   string // "SIGKILL", "SIGSEGV", ... or ""
	// Stderr is the tail of the server's stderr (at most Config.StderrTailBytes), and
	// StderrTruncated says whether earlier bytes were dropped.
	Stderr          []byte
	StderrTruncated bool
	// Cause, when set, is the connection failure (a *ConnError) for which the client
	// terminated the server.
	Cause error
}

func (e *ServerExitError) Error() string {
	var b strings.Builder
	if e.Cause != nil {
		b.WriteString("was terminated after its connection failed and ")
	}
	if e.Signal != "" {
		fmt.Fprintf(&b, "was ended by %s", e.Signal)
	} else {
		fmt.Fprintf(&b, "exited with code %d", e.ExitCode)
	}
	if last := lastLines(e.Stderr, 3, 400); last != "" {
		fmt.Fprintf(&b, "; stderr ends: %s", strconv.Quote(last))
	}
	name := fmt.Sprintf("%s (pid %d)", e.Server, e.Pid)
	return errtext.Format("lsp", "server", name, errors.New(b.String()), e.Cause, "")
}

// Is reports whether target is ErrServerExited.
func (e *ServerExitError) Is(target error) bool { return target == ErrServerExited }

// Unwrap returns Cause.
func (e *ServerExitError) Unwrap() error { return e.Cause }

// ConnError is a failure of the connection itself: a frame over the cap, bytes that are not
// a frame, or a failed write to the server's stdin. A broken read fails every pending call
// at once, and the client then terminates the server.
type ConnError struct {
	Server string
	Op     string // "read" or "write"
	Err    error
	Hint   string
}

func (e *ConnError) Error() string {
	return errtext.Format("lsp", e.Op, "server "+e.Server, nil, e.Err, e.Hint)
}

func (e *ConnError) Unwrap() error { return e.Err }

func readFailure(server string, err error) *ConnError {
	e := &ConnError{Server: server, Op: "read", Err: err}
	var tl *FrameTooLargeError
	switch {
	case errors.As(err, &tl):
		e.Hint = fmt.Sprintf("raise Config.MaxFrameBytes above %d if the server really sends messages that large", tl.Max)
	case errors.Is(err, ErrMalformedFrame):
		e.Hint = "the server's stdout must carry LSP frames only; servers log to stderr"
	}
	return e
}

// lastLines returns the last n non-empty lines of b, at most max bytes.
func lastLines(b []byte, n, max int) string {
	b = bytes.TrimRight(b, "\r\n\t ")
	start := len(b)
	for i := 0; i < n && start > 0; i++ {
		j := bytes.LastIndexByte(b[:start], '\n')
		start = j
		if j < 0 {
			start = 0
		}
	}
	if start < len(b) && b[start] == '\n' {
		start++
	}
	if len(b)-start > max {
		start = len(b) - max
	}
	return string(b[start:])
}
