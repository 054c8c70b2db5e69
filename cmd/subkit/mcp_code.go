package main

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subkit/subkit/coderuntime"
	"github.com/subkit/subkit/internal/registry"
	"github.com/subkit/subkit/internal/termtext"
)

type codeRunIn struct {
	Language  string `json:"language" jsonschema:"python3, node or bash"`
	Code      string `json:"code" jsonschema:"the program, run as a file of the language (main.py, main.js, main.sh) in a fresh private directory"`
	Stdin     string `json:"stdin,omitempty" jsonschema:"text written to the code's standard input, which is then closed; without it stdin is the null device"`
	TimeoutMs int64  `json:"timeout_ms,omitempty" jsonschema:"timeout in milliseconds (default 60000; above maxTimeoutMs it is lowered to it); the whole tree is then terminated"`
}

// renderCode is a run as a model reads it: stdout, stderr under a [stderr] line, each as
// internal/termtext renders it (as bash's text and the shell's), then tail
// (the error, the status, on bracketed lines).
func renderCode(stdout, stderr streamOut, tail string) string {
	var b strings.Builder
	wrote := false
	for _, s := range []struct {
		name string
		st   streamOut
	}{{"stdout", stdout}, {"stderr", stderr}} {
		if s.st.TotalBytes == 0 {
			continue
		}
		if s.name == "stderr" {
			b.WriteString("[stderr]\n")
		}
		if s.st.Truncated {
			fmt.Fprintf(&b, "[%s truncated: only its last %d of %d bytes are shown below", s.name, len(s.st.Tail), s.st.TotalBytes)
			if s.st.SpillPath != "" {
				fmt.Fprintf(&b, "; the whole %s is in the file %s", s.name, s.st.SpillPath)
			}
			b.WriteString("]\n")
		}
		b.WriteString(termtext.Lines([]byte(s.st.Tail)))
		wrote = true
	}
	if !wrote {
		b.WriteString("(no output)\n")
	}
	b.WriteString(tail)
	return b.String()
}

// errorLine is the bracketed line naming an error, or "" for none.
func errorLine(cerr *codeErrorOut) string {
	if cerr == nil {
		return ""
	}
	return fmt.Sprintf("[error: %s: %s]\n", cerr.Name, cerr.Value)
}

func codeStatus(exit int, signal string, timedOut, cancelled bool, timeout time.Duration) string {
	switch {
	case timedOut:
		return fmt.Sprintf("[timed out after %v: the code and every process it started were terminated]\n", timeout)
	case cancelled:
		return "[cancelled: the code and every process it started were terminated]\n"
	case signal != "":
		return fmt.Sprintf("[killed by signal %s]\n", signal)
	}
	return fmt.Sprintf("[exit code %d]\n", exit)
}

// codeCallError is the tool error of a run that never started.
func codeCallError(err error) error {
	switch {
	case errors.Is(err, coderuntime.ErrInvalid), errors.Is(err, coderuntime.ErrUnsupportedLanguage):
		return fmt.Errorf("[request refused, the code did not run: %v]", err)
	case errors.Is(err, coderuntime.ErrRuntimeUnavailable):
		return fmt.Errorf("[the code did not run: its interpreter is not available here: %v]", err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("[cancelled before it started, the code did not run: %v]", err)
	case errors.Is(err, coderuntime.ErrClosed):
		return errors.New("[tool failure: the code runtime has been shut down; the code did not run]")
	}
	return fmt.Errorf("[tool failure, not a failure of the code: %v]", err)
}

// codeTimeout turns timeout_ms into a timeout: 0 is the runtime's default; above the bash
// executor's maxTimeoutMs it is lowered, and the note says so.
func (w *mcpWorld) codeTimeout(ms int64) (time.Duration, string, error) {
	max := w.exec.Config().MaxTimeout
	switch {
	case ms < 0:
		return 0, "", fmt.Errorf("[request refused, the code did not run: timeout_ms %d is negative; omit it for the default]", ms)
	case ms == 0:
		return min(coderuntime.DefaultTimeout, max), "", nil
	case ms > max.Milliseconds():
		return max, fmt.Sprintf("[timeout_ms %d is above the limit maxTimeoutMs %d: %d applied]\n", ms, max.Milliseconds(), max.Milliseconds()), nil
	}
	return time.Duration(ms) * time.Millisecond, "", nil
}

type codeSessionOpenIn struct {
	Language string `json:"language" jsonschema:"python3 or node"`
	Dir      string `json:"dir,omitempty" jsonschema:"the code's working directory (default: a private directory of the session, removed when it closes)"`
}

type codeSessionOut struct {
	ID       string `json:"id" jsonschema:"the session's id, for the other code_session_ tools"`
	Language string `json:"language"`
}

type codeCellIn struct {
	ID        string `json:"id" jsonschema:"the id code_session_open returned"`
	Code      string `json:"code" jsonschema:"a cell of code, run in the session's state (variables, imports, functions); the value of a trailing expression is the cell's main result"`
	TimeoutMs int64  `json:"timeout_ms,omitempty" jsonschema:"the cell's timeout in milliseconds (default 60000); then it is interrupted (KeyboardInterrupt), and the interpreter restarted if it does not answer"`
}

type codeIDIn struct {
	ID string `json:"id" jsonschema:"the id code_session_open returned"`
}

type codeListOut struct {
	Sessions []codeSessionOut `json:"sessions"`
}

// newCodeSessions is a client's registry of code sessions by id, at most mcpMaxCodeSession.
func newCodeSessions() *registry.Registry[coderuntime.Session] {
	return registry.New(registry.Config[coderuntime.Session]{NewID: func() string { return mcpNewID("cs-") }, Max: mcpMaxCodeSession})
}

// codeSession is the client's code session of id.
func (w *mcpWorld) codeSession(id string) (coderuntime.Session, error) {
	sess, ok := w.cells.Get(id)
	if !ok {
		return nil, fmt.Errorf("[request refused: no code session %q; open one with code_session_open (code_session_list lists them)]", id)
	}
	return sess, nil
}

// codeSessionList is the client's open code sessions, in the order they were opened.
func (w *mcpWorld) codeSessionList() []codeSessionOut {
	out := []codeSessionOut{}
	for _, e := range w.cells.List() {
		out = append(out, codeSessionOut{ID: e.ID, Language: string(e.Value.Language())})
	}
	return out
}

// enumSchema is In's generated schema with its property prop limited to values.
func enumSchema[In any](prop string, values ...string) *jsonschema.Schema {
	sch, err := jsonschema.For[In](nil)
	if err != nil {
		panic(fmt.Sprintf("schema of %T: %v", *new(In), err)) // a programming error, found by every test
	}
	p := sch.Properties[prop]
	if p == nil {
		panic(fmt.Sprintf("schema of %T has no property %q", *new(In), prop)) // the same
	}
	for _, v := range values {
		p.Enum = append(p.Enum, v)
	}
	return sch
}

func (s *mcpServer) addCodeTools(server *mcp.Server) {
	addTool(s, server, &mcp.Tool{Name: "code_run", Title: "Run a snippet of code",
		Description: "Runs a python3, node or bash program once, in a fresh private directory, and returns its output, exit " +
			"status and (python3, node) the uncaught exception as name, value and traceback. On timeout or cancellation the " +
			"whole process tree is terminated; whatever the code left running is ended too.",
		InputSchema: enumSchema[codeRunIn]("language", "python3", "node", "bash"),
	}, (*mcpWorld).codeRunTool)
	addTool(s, server, &mcp.Tool{Name: "code_session_open", Title: "Open a code session",
		Description: "Starts a python3 or node interpreter whose state (variables, imports, functions, cwd) lasts from one " +
			"code_session_run cell to the next, as in a notebook. Returns its id. At most 16 are open.",
		InputSchema: enumSchema[codeSessionOpenIn]("language", "python3", "node"),
	}, func(w *mcpWorld, ctx context.Context, req *mcp.CallToolRequest, in codeSessionOpenIn) (string, codeSessionOut, error) {
		if w.cells.Len() < mcpMaxCodeSession { // at its own limit, the client is refused below
			release, err := s.admit("code sessions open", mcpShare*mcpMaxCodeSession, func(x *mcpWorld) int { return x.cells.Len() })
			if err != nil {
				return "", codeSessionOut{}, err
			}
			defer release()
		}
		return w.codeSessionOpenTool(ctx, req, in)
	})
	addToolResult(s, server, &mcp.Tool{Name: "code_session_run", Title: "Run a cell in a code session",
		Description: "Runs one cell of code in a code session and returns its output, its results (the value of a trailing " +
			"expression, display() calls; images as image content) and its error. A cell past its timeout, or cancelled, is " +
			"interrupted; an interpreter that does not answer then is restarted (the state is lost, and the result says so).",
	}, (*mcpWorld).codeCellTool)
	addTool(s, server, &mcp.Tool{Name: "code_session_restart", Title: "Restart a code session",
		Description: "Replaces a code session's interpreter with a fresh one: its state is gone, and every process its cells started is ended.",
	}, func(w *mcpWorld, ctx context.Context, _ *mcp.CallToolRequest, in codeIDIn) (string, codeSessionOut, error) {
		sess, err := w.codeSession(in.ID)
		if err != nil {
			return "", codeSessionOut{}, err
		}
		if err := sess.Restart(ctx); err != nil {
			return "", codeSessionOut{}, codeCallError(err)
		}
		return fmt.Sprintf("[code session %s restarted: a fresh %s interpreter]\n", in.ID, sess.Language()),
			codeSessionOut{ID: in.ID, Language: string(sess.Language())}, nil
	})
	addTool(s, server, &mcp.Tool{Name: "code_session_close", Title: "Close a code session",
		Description: "Closes a code session: its interpreter and everything its cells started are ended.",
	}, func(w *mcpWorld, ctx context.Context, _ *mcp.CallToolRequest, in codeIDIn) (string, codeSessionOut, error) {
		sess, ok := w.cells.Remove(in.ID)
		if !ok {
			return "", codeSessionOut{}, fmt.Errorf("[request refused: no code session %q; open one with code_session_open]", in.ID)
		}
		if err := sess.Close(); err != nil {
			return "", codeSessionOut{}, fmt.Errorf("[tool failure: closing code session %s: %v]", in.ID, err)
		}
		return fmt.Sprintf("[closed code session %s]\n", in.ID), codeSessionOut{ID: in.ID, Language: string(sess.Language())}, nil
	})
	addTool(s, server, &mcp.Tool{Name: "code_session_list", Title: "List code sessions",
		Description: "Lists the open code sessions.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(w *mcpWorld, ctx context.Context, _ *mcp.CallToolRequest, _ shellOpenIn) (string, codeListOut, error) {
		out := codeListOut{Sessions: w.codeSessionList()}
		var b strings.Builder
		for _, c := range out.Sessions {
			fmt.Fprintf(&b, "code session %s: %s\n", c.ID, c.Language)
		}
		if len(out.Sessions) == 0 {
			b.WriteString("[no code sessions are open; code_session_open opens one]\n")
		}
		return b.String(), out, nil
	})
}

func (w *mcpWorld) codeRunTool(ctx context.Context, req *mcp.CallToolRequest, in codeRunIn) (string, codeResult, error) {
	timeout, note, err := w.codeTimeout(in.TimeoutMs)
	if err != nil {
		return "", codeResult{}, err
	}
	r := coderuntime.Request{Language: coderuntime.Language(in.Language), Code: in.Code, Timeout: timeout}
	if in.Stdin != "" {
		r.Stdin = []byte(in.Stdin)
	}
	stop := w.s.progress(ctx, req, "code_run "+in.Language)
	res, err := w.s.code.Run(ctx, r)
	stop()
	if err != nil {
		return "", codeResult{}, codeCallError(err)
	}
	out := codeResultOf(res, timeout)
	text := note + renderCode(out.Stdout, out.Stderr, errorLine(out.Error)+codeStatus(res.ExitCode, res.Signal, res.TimedOut, res.Cancelled, timeout))
	return text, out, nil
}

func (w *mcpWorld) codeSessionOpenTool(ctx context.Context, _ *mcp.CallToolRequest, in codeSessionOpenIn) (string, codeSessionOut, error) {
	slot, _, err := w.cells.Reserve() // code sessions are never evicted
	switch {
	case errors.Is(err, registry.ErrFull):
		return "", codeSessionOut{}, fmt.Errorf("[request refused: %d code sessions are open, the limit; close one with code_session_close]", mcpMaxCodeSession)
	case err != nil:
		return "", codeSessionOut{}, errLeaving
	}
	dir := in.Dir
	if dir != "" && !filepath.IsAbs(dir) {
		dir = filepath.Join(w.s.cwd, dir)
	}
	defer slot.Cancel() // the slot is freed even if NewSession panics; a no-op after Fill
	sess, err := w.s.code.NewSession(ctx, coderuntime.SessionConfig{Language: coderuntime.Language(in.Language), Dir: dir})
	if err != nil {
		return "", codeSessionOut{}, codeCallError(err)
	}
	if err := slot.Fill(sess); err != nil { // closed before the deferred Cancel lets the registry's Close go on
		return "", codeSessionOut{}, errors.Join(errLeaving, sess.Close())
	}
	id := slot.ID()
	return fmt.Sprintf("[opened %s code session %s; run cells with code_session_run {\"id\":%q,\"code\":...}]\n", in.Language, id, id),
		codeSessionOut{ID: id, Language: in.Language}, nil
}

// Bounds of a cell's results: an image sent as image content, the text of one result.
const (
	mcpMaxImageBytes = 1 << 20
	mcpMaxResultText = 16000
)

func (w *mcpWorld) codeCellTool(ctx context.Context, req *mcp.CallToolRequest, in codeCellIn) (*mcp.CallToolResult, cellResult, error) {
	sess, err := w.codeSession(in.ID)
	if err != nil {
		return nil, cellResult{}, err
	}
	timeout, note, err := w.codeTimeout(in.TimeoutMs)
	if err != nil {
		return nil, cellResult{}, err
	}
	stop := w.s.progress(ctx, req, "code_session_run")
	ex, err := sess.Run(ctx, coderuntime.Cell{Code: in.Code, Timeout: timeout}, coderuntime.Callbacks{})
	stop()
	if err != nil && !errors.Is(err, coderuntime.ErrClosed) {
		return nil, cellResult{}, codeCallError(err)
	}
	out := cellResultOf(in.ID, ex, mcpMaxResultText, false)
	var images []mcp.Content
	var b strings.Builder
	b.WriteString(note)
	for _, r := range ex.Results {
		for _, mt := range []string{"image/png", "image/jpeg"} {
			if data, ok := r.MIME[mt]; ok && base64.StdEncoding.DecodedLen(len(data)) <= mcpMaxImageBytes {
				if raw, err := base64.StdEncoding.DecodeString(data); err == nil {
					images = append(images, &mcp.ImageContent{Data: raw, MIMEType: mt})
				} else {
					w.s.log.Debug("undecodable image result", "err", err)
				}
			}
		}
	}
	b.WriteString(renderCode(out.Stdout, out.Stderr, renderCell(out, timeout, errors.Is(err, coderuntime.ErrClosed))))
	res := &mcp.CallToolResult{Content: append([]mcp.Content{&mcp.TextContent{Text: b.String()}}, images...)}
	return res, out, nil
}

// renderCell is what follows a cell's output in its text: its results in order (a result an
// earlier cell's code displayed names that cell), its error with the traceback, the background
// errors, the notes, then what happened to it.
func renderCell(out cellResult, timeout time.Duration, closed bool) string {
	var b strings.Builder
	for _, r := range out.Results {
		if r.FromCell > 0 {
			fmt.Fprintf(&b, "[from cell %d] ", r.FromCell)
		}
		switch {
		case r.Main:
			fmt.Fprintf(&b, "Out[%d]: %s\n", out.ExecutionCount, r.Text)
		case r.Text != "":
			b.WriteString(r.Text + "\n")
		}
	}
	if out.Error != nil {
		b.WriteString(errorLine(out.Error))
		if tb := strings.TrimSuffix(out.Error.Traceback, "\n"); tb != "" {
			b.WriteString(tb + "\n")
		}
	}
	for _, e := range out.BackgroundErrors {
		fmt.Fprintf(&b, "[%s: %s: %s]\n", backgroundErrorHead(e.Cell), e.Name, e.Value)
		if tb := strings.TrimSuffix(e.Traceback, "\n"); tb != "" {
			b.WriteString(tb + "\n")
		}
	}
	if out.BackgroundErrorsDropped > 0 {
		fmt.Fprintf(&b, "[%d more background errors left out]\n", out.BackgroundErrorsDropped)
	}
	for _, n := range out.Notes {
		fmt.Fprintf(&b, "[note: %s]\n", n)
	}
	switch {
	case closed:
		b.WriteString("[the code session was closed during the cell]\n")
	case out.TimedOut:
		fmt.Fprintf(&b, "[timed out after %v: the cell was interrupted]\n", timeout)
	case out.Cancelled:
		b.WriteString("[cancelled: the cell was interrupted]\n")
	}
	if out.Restarted {
		how := ""
		if e := out.InterpreterExit; e != nil && e.Signal != "" {
			how = " after it was killed by signal " + e.Signal
		} else if e != nil && e.ExitCode != nil {
			how = fmt.Sprintf(" after it exited with status %d", *e.ExitCode)
		}
		fmt.Fprintf(&b, "[the interpreter was restarted%s: the session's earlier state is gone]\n", how)
	}
	return b.String()
}
