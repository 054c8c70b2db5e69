package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subkit/subkit/bash"
	"github.com/subkit/subkit/internal/done"
	"github.com/subkit/subkit/internal/modelenv"
	"github.com/subkit/subkit/internal/registry"
	"github.com/subkit/subkit/subprocess"
)

type bashIn struct {
	Command   string `json:"command" jsonschema:"bash source, run by a fresh non-login bash -c in a process group of its own; no state survives between calls but the file system"`
	TimeoutMs int64  `json:"timeout_ms,omitempty" jsonschema:"foreground timeout in milliseconds (default: the configuration's timeoutMs, 120000); above maxTimeoutMs it is lowered to it, and timeout_ms in the result says what applied. On timeout the whole tree gets SIGTERM, then SIGKILL"`
	Stdin     string `json:"stdin,omitempty" jsonschema:"text written to the command's standard input, which is then closed; without it stdin is the null device"`
}

// bashCallError is the tool error of a call that never ran: the executor's own wording.
func bashCallError(err error) error { return errors.New(bash.Render(bash.Result{}, err)) }

type bashStartIn struct {
	Command string `json:"command" jsonschema:"bash source, run in the background by a fresh bash -c, without a timeout, until it exits or bash_stop ends it"`
	Stdin   string `json:"stdin,omitempty" jsonschema:"text written to its standard input, which is then closed; without it stdin is the null device"`
}

type bashStartOut struct {
	ID      string `json:"id" jsonschema:"the background process's id, for bash_read and bash_stop"`
	Pid     int    `json:"pid" jsonschema:"the shell's pid, also its process group id"`
	Command string `json:"command"`
}

type bashReadIn struct {
	ID           string `json:"id" jsonschema:"the id bash_start returned"`
	StdoutOffset int64  `json:"stdout_offset,omitempty" jsonschema:"whole-stream byte offset of stdout to read from: 0 (the default) for the start, the previous read's next.stdout to read on"`
	StderrOffset int64  `json:"stderr_offset,omitempty" jsonschema:"whole-stream byte offset of stderr to read from"`
	MaxBytes     int    `json:"max_bytes,omitempty" jsonschema:"at most this many bytes of each stream (default: the configuration's maxOutputBytes, 64000; at most 1048576)"`
	WaitMs       int64  `json:"wait_ms,omitempty" jsonschema:"wait up to this many milliseconds for new output or the process's end before reading (default 0: read at once; at most 600000)"`
}

type mcpDelta struct {
	Data    string `json:"data" jsonschema:"the bytes read, as UTF-8"`
	From    int64  `json:"from" jsonschema:"the stream offset of data's first byte; above the offset asked for when bytes were dropped"`
	Next    int64  `json:"next" jsonschema:"the offset to read from next time"`
	Dropped int64  `json:"dropped" jsonschema:"bytes before from that are no longer kept"`
	Total   int64  `json:"total" jsonschema:"bytes the stream has produced so far"`
	Done    bool   `json:"done" jsonschema:"the stream has ended and everything was read"`
}

func deltaOf(d subprocess.Delta) mcpDelta {
	data := d.Data
	if d.Dropped > 0 {
		data = wholeStart(data)
	}
	return mcpDelta{Data: string(data), From: d.From, Next: d.Next, Dropped: d.Dropped, Total: d.Total, Done: d.Done}
}

type mcpOffsets struct {
	Stdout int64 `json:"stdout"`
	Stderr int64 `json:"stderr"`
}

type bashReadOut struct {
	ID      string      `json:"id"`
	Pid     int         `json:"pid"`
	Command string      `json:"command"`
	Stdout  mcpDelta    `json:"stdout"`
	Stderr  mcpDelta    `json:"stderr"`
	Next    mcpOffsets  `json:"next" jsonschema:"the offsets to pass as stdout_offset and stderr_offset next time"`
	Running bool        `json:"running" jsonschema:"the process still runs"`
	Done    bool        `json:"done" jsonschema:"the process has ended and both streams were read to their end"`
	Result  *bashResult `json:"result,omitempty" jsonschema:"how the process ended, once it has"`
}

type bashIDIn struct {
	ID string `json:"id" jsonschema:"the id bash_start returned"`
}

type bashStopOut struct {
	ID string `json:"id"`
	bashResult
}

// newBackground is a client's registry of background processes by id, ended or not: an
// ended one is still read by offset until a new one needs its place (the least recently used
// ended one goes past mcpMaxBackground entries; with none ended, the new one is refused).
func newBackground() *registry.Registry[*bash.Process] {
	return registry.New(registry.Config[*bash.Process]{NewID: func() string { return mcpNewID("bg-") }, Max: mcpMaxBackground,
		Ended: func(p *bash.Process) bool { return done.Closed(p.Done()) }})
}

// background is the client's background process of id.
func (w *mcpWorld) background(id string) (*bash.Process, error) {
	p, ok := w.bg.Get(id)
	if !ok {
		return nil, fmt.Errorf("no background process %q: start one with bash_start, which returns its id (an ended one is kept until a new one needs its place, past %d kept)", id, mcpMaxBackground)
	}
	return p, nil
}

func (s *mcpServer) addBashTools(server *mcp.Server) {
	ceiling := mcpShare * s.execCfg.MaxBackground
	addTool(s, server, &mcp.Tool{Name: "bash", Title: "Run a bash command",
		Description: "Runs one bash command in the foreground and returns its output and exit status: a fresh non-login bash -c " +
			"per call (no state survives but the file system), stdin from the null device, no colour, pager, editor or password " +
			"prompt, Python's output unbuffered (" + strings.Join(modelenv.Pipes(), " ") + "). Each stream keeps its last 64000 bytes; a longer stream is " +
			"kept whole in a file the result names. On timeout or cancellation the whole process tree is terminated. " +
			"For stateful work (cd, exports, a REPL) use shell_open; for long-running servers use bash_start.",
	}, (*mcpWorld).bashTool)
	addTool(s, server, &mcp.Tool{Name: "bash_start", Title: "Start a background command",
		Description: "Starts a bash command in the background and returns its id at once. It runs without a timeout until it exits " +
			"or bash_stop ends it (with everything it started), or the client leaves. Read its output with bash_read.",
	}, func(w *mcpWorld, ctx context.Context, req *mcp.CallToolRequest, in bashStartIn) (string, bashStartOut, error) {
		if w.exec.Stats().Running < s.execCfg.MaxBackground { // at its own limit, the executor refuses
			release, err := s.admit("background processes running", ceiling, func(x *mcpWorld) int { return x.exec.Stats().Running })
			if err != nil {
				return "", bashStartOut{}, err
			}
			defer release()
		}
		return w.bashStartTool(ctx, req, in)
	})
	addTool(s, server, &mcp.Tool{Name: "bash_read", Title: "Read a background command's output",
		Description: "Reads a background command's stdout and stderr from whole-stream byte offsets (the previous read's next " +
			"offsets read on; 0 reads from the start again), optionally waiting for it to end first, and says whether it still " +
			"runs and, once ended, how.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, (*mcpWorld).bashReadTool)
	addTool(s, server, &mcp.Tool{Name: "bash_stop", Title: "Stop a background command",
		Description: "Ends a background command and everything it started (SIGTERM, then SIGKILL after the grace) and returns " +
			"how it ended. Its output stays readable with bash_read.",
	}, (*mcpWorld).bashStopTool)
}

func (w *mcpWorld) bashTool(ctx context.Context, req *mcp.CallToolRequest, in bashIn) (string, bashResult, error) {
	max := w.exec.Config().MaxTimeout
	note := ""
	if in.TimeoutMs > max.Milliseconds() {
		note = fmt.Sprintf("[timeout_ms %d is above the limit maxTimeoutMs %d: %d applied]\n", in.TimeoutMs, max.Milliseconds(), max.Milliseconds())
		in.TimeoutMs = max.Milliseconds()
	}
	if in.TimeoutMs < 0 {
		return "", bashResult{}, bashCallError(&bash.RequestError{Field: "timeout_ms", Err: fmt.Errorf("%d is negative; omit it for the default", in.TimeoutMs)})
	}
	r := bash.Request{Command: in.Command, Timeout: time.Duration(in.TimeoutMs) * time.Millisecond}
	if in.Stdin != "" {
		r.Stdin = []byte(in.Stdin)
	}
	stop := w.s.progress(ctx, req, "bash")
	res, err := w.exec.Exec(ctx, r)
	stop()
	if err != nil {
		return "", bashResult{}, bashCallError(err)
	}
	return note + bash.Render(res, nil), bashResultOf(res), nil
}

func (w *mcpWorld) bashStartTool(ctx context.Context, _ *mcp.CallToolRequest, in bashStartIn) (string, bashStartOut, error) {
	r := bash.Request{Command: in.Command}
	if in.Stdin != "" {
		r.Stdin = []byte(in.Stdin)
	}
	p, err := w.exec.Start(ctx, r)
	if err != nil {
		return "", bashStartOut{}, bashCallError(err)
	}
	id, evictErr, err := w.bg.Add(p)
	switch {
	case errors.Is(err, registry.ErrFull):
		return "", bashStartOut{}, errors.Join(fmt.Errorf("[request refused: %d background processes are kept and none has ended; end one with bash_stop]", mcpMaxBackground), p.Close())
	case err != nil:
		return "", bashStartOut{}, errors.Join(errLeaving, p.Close())
	}
	if evictErr != nil {
		w.s.log.Warn("release an ended background process", "err", evictErr)
	}
	text := fmt.Sprintf("[started background process %s (pid %d); read its output with bash_read {\"id\":%q}, end it with bash_stop {\"id\":%q}]\n",
		id, p.Pid(), id, id)
	return text, bashStartOut{ID: id, Pid: p.Pid(), Command: p.Command()}, nil
}

func (w *mcpWorld) bashReadTool(ctx context.Context, req *mcp.CallToolRequest, in bashReadIn) (string, bashReadOut, error) {
	p, err := w.background(in.ID)
	if err != nil {
		return "", bashReadOut{}, err
	}
	max := in.MaxBytes
	switch {
	case max < 0:
		return "", bashReadOut{}, fmt.Errorf("max_bytes %d is negative; omit it for the default %d", max, w.exec.Config().MaxOutputBytes)
	case max == 0:
		max = w.exec.Config().MaxOutputBytes
	case max > mcpMaxReadBytes:
		return "", bashReadOut{}, fmt.Errorf("max_bytes %d is above the limit %d; read in steps with the offsets", max, mcpMaxReadBytes)
	}
	if in.StdoutOffset < 0 || in.StderrOffset < 0 {
		return "", bashReadOut{}, errors.New("stdout_offset and stderr_offset are byte offsets from 0; a negative one is not")
	}
	wait, err := millis("wait_ms", in.WaitMs, 0, mcpMaxWait)
	if err != nil {
		return "", bashReadOut{}, err
	}
	if wait > 0 { // until there is new output or the end, within wait; then read as usual
		stop := w.s.progress(ctx, req, "bash_read")
		wctx, cancel := context.WithTimeout(ctx, wait)
		p.WaitOutput(wctx, bash.Offsets{Stdout: in.StdoutOffset, Stderr: in.StderrOffset}, 1) // its error is the read's below, or the wait's end
		cancel()
		stop()
	}
	d, err := p.ReadOutput(bash.Offsets{Stdout: in.StdoutOffset, Stderr: in.StderrOffset}, max)
	if err != nil {
		return "", bashReadOut{}, fmt.Errorf("[request refused: %v]", err)
	}
	out := bashReadOut{ID: in.ID, Pid: d.Pid, Command: d.Command, Stdout: deltaOf(d.Stdout), Stderr: deltaOf(d.Stderr),
		Next: mcpOffsets{Stdout: d.Next.Stdout, Stderr: d.Next.Stderr}, Running: d.Result == nil, Done: d.Done()}
	if d.Result != nil {
		r := bashResultOf(*d.Result)
		out.Result = &r
	}
	return bash.RenderDelta(d), out, nil
}

func (w *mcpWorld) bashStopTool(ctx context.Context, _ *mcp.CallToolRequest, in bashIDIn) (string, bashStopOut, error) {
	p, err := w.background(in.ID)
	if err != nil {
		return "", bashStopOut{}, err
	}
	if err := p.Close(); err != nil { // terminates the tree, bounded by the grace
		return "", bashStopOut{}, fmt.Errorf("[tool failure: background process %s (pid %d) could not be ended: %v]", in.ID, p.Pid(), err)
	}
	res, err := p.Wait(ctx)
	if err != nil {
		return "", bashStopOut{}, fmt.Errorf("[tool failure: background process %s (pid %d): %v]", in.ID, p.Pid(), err)
	}
	text := fmt.Sprintf("[background process %s (pid %d) has ended; its output stays readable with bash_read]\n", in.ID, p.Pid())
	return text + bash.Render(res, nil), bashStopOut{ID: in.ID, bashResult: bashResultOf(res)}, nil
}
