package lsp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/subkit/subkit/internal/framing"
)

var (
	// ErrClosed: the Client was shut down (Shutdown or Close); start a new one.
	ErrClosed = errors.New("lsp: client is shut down")
	// ErrServerExited is wrapped by every *ServerExitError.
	ErrServerExited = errors.New("lsp: server exited")
	// ErrFrameTooLarge: the server sent a frame over Config.MaxFrameBytes. The connection
	// fails with a *ConnError wrapping a *FrameTooLargeError.
	ErrFrameTooLarge = framing.ErrTooLarge
	// ErrMalformedFrame: the server wrote bytes to stdout that are not a Content-Length frame
	// (a log line, a bad header, a frame cut short). The connection fails with a *ConnError.
	ErrMalformedFrame = framing.ErrMalformed
)

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
	if e.Method != "" {
		return fmt.Sprintf("lsp: %s: server error %d: %s", e.Method, e.Code, e.Message)
	}
	return fmt.Sprintf("lsp: error %d: %s", e.Code, e.Message)
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
	fmt.Fprintf(&b, "lsp: server %s (pid %d) ", e.Server, e.Pid)
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
	if e.Cause != nil {
		b.WriteString(": ")
		b.WriteString(e.Cause.Error())
	}
	return b.String()
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
	s := fmt.Sprintf("lsp: %s from server %s failed: %v", e.Op, e.Server, e.Err)
	if e.Op == "write" {
		s = fmt.Sprintf("lsp: write to server %s failed: %v", e.Server, e.Err)
	}
	if e.Hint != "" {
		s += " (" + e.Hint + ")"
	}
	return s
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
