package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subkit/subkit/bash"
	"github.com/subkit/subkit/subprocess"
)

type bashIn struct {
	Command   string `json:"command" jsonschema:"bash source, run by a fresh non-login bash -c in a process group of its own; no state survives between calls but the file system"`
	TimeoutMs int64  `json:"timeout_ms,omitempty" jsonschema:"foreground timeout in milliseconds (default: the configuration's timeoutMs, 120000); above maxTimeoutMs it is lowered to it, and timeout_ms in the result says what applied. On timeout the whole tree gets SIGTERM, then SIGKILL"`
	Stdin     string `json:"stdin,omitempty" jsonschema:"text written to the command's standard input, which is then closed; without it stdin is the null device"`
}

// mcpStream is one collected output stream.
type mcpStream struct {
	Tail       string `json:"tail" jsonschema:"the end of the stream (all of it unless truncated), as UTF-8"`
	TotalBytes int64  `json:"total_bytes" jsonschema:"bytes the stream produced"`
	Truncated  bool   `json:"truncated" jsonschema:"tail is not the whole stream"`
	SpillPath  string `json:"spill_path" jsonschema:"a private file holding the whole stream when it was truncated, or empty; read it with sed -n, grep or tail"`
}

func streamOf(r subprocess.StreamResult) mcpStream {
	tail := r.Tail
	if r.Truncated {
		tail = trimPartialStart(tail)
	}
	return mcpStream{Tail: string(tail), TotalBytes: r.TotalBytes, Truncated: r.Truncated, SpillPath: r.SpillPath}
}

type mcpProc struct {
	Pid  int    `json:"pid"`
	Comm string `json:"comm" jsonschema:"the command name"`
}

type bashOut struct {
	Command    string         `json:"command"`
	Pid        int            `json:"pid" jsonschema:"the shell's pid, also its process group id"`
	ExitCode   *int           `json:"exit_code" jsonschema:"the shell's exit status; null when a signal ended it"`
	Signal     string         `json:"signal" jsonschema:"the signal that ended the shell (SIGKILL), or empty"`
	TimedOut   bool           `json:"timed_out" jsonschema:"the timeout expired and the whole tree was terminated"`
	Cancelled  bool           `json:"cancelled" jsonschema:"the client cancelled the call (or the server shut down) and the whole tree was terminated"`
	TimeoutMs  int64          `json:"timeout_ms" jsonschema:"the timeout that applied, in milliseconds; 0 for a background command"`
	DurationMs int64          `json:"duration_ms"`
	Stdout     mcpStream      `json:"stdout"`
	Stderr     mcpStream      `json:"stderr"`
	PipesHeld  bool           `json:"pipes_held" jsonschema:"a process the command started kept the output open after the shell exited; what it wrote later is not here"`
	Lingering  bool           `json:"lingering" jsonschema:"processes the command started still run after the shell exited (a server &); they run until they exit or the server shuts down"`
	Survivors  []mcpProc      `json:"survivors" jsonschema:"the lingering processes, as listed when the shell exited"`
	Sandbox    *sandboxOutput `json:"sandbox,omitempty" jsonschema:"how the command was confined, when the server runs with a sandbox"`
}

func bashOutOf(r bash.Result) bashOut {
	out := bashOut{
		Command: r.Command, Pid: r.Pid, Signal: r.Signal, TimedOut: r.TimedOut, Cancelled: r.Cancelled,
		TimeoutMs: r.Timeout.Milliseconds(), DurationMs: r.Duration.Milliseconds(),
		Stdout: streamOf(r.Stdout), Stderr: streamOf(r.Stderr), PipesHeld: r.PipesHeld, Lingering: r.Lingering,
		Survivors: []mcpProc{}, Sandbox: sandboxJSON(r.Sandbox),
	}
	if r.Signal == "" {
		code := r.ExitCode
		out.ExitCode = &code
	}
	for _, p := range r.Survivors {
		out.Survivors = append(out.Survivors, mcpProc{Pid: p.Pid, Comm: p.Comm})
	}
	return out
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
		data = trimPartialStart(data)
	}
	return mcpDelta{Data: string(data), From: d.From, Next: d.Next, Dropped: d.Dropped, Total: d.Total, Done: d.Done}
}

type mcpOffsets struct {
	Stdout int64 `json:"stdout"`
	Stderr int64 `json:"stderr"`
}

type bashReadOut struct {
	ID      string     `json:"id"`
	Pid     int        `json:"pid"`
	Command string     `json:"command"`
	Stdout  mcpDelta   `json:"stdout"`
	Stderr  mcpDelta   `json:"stderr"`
	Next    mcpOffsets `json:"next" jsonschema:"the offsets to pass as stdout_offset and stderr_offset next time"`
	Running bool       `json:"running" jsonschema:"the process still runs"`
	Done    bool       `json:"done" jsonschema:"the process has ended and both streams were read to their end"`
	Result  *bashOut   `json:"result,omitempty" jsonschema:"how the process ended, once it has"`
}

type bashIDIn struct {
	ID string `json:"id" jsonschema:"the id bash_start returned"`
}

type bashStopOut struct {
	ID string `json:"id"`
	bashOut
}

// bgTable keeps a client's background processes by id, ended or not: an ended one is still
// read by offset until the table drops it (the oldest ended ones, past mcpMaxBackground
// entries).
type bgTable struct {
	mu     sync.Mutex
	seq    int
	procs  map[string]*bgEntry
	closed bool
}

type bgEntry struct {
	id  string
	seq int // order of start
	p   *bash.Process
}

func (t *bgTable) add(p *bash.Process) (string, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return "", errLeaving
	}
	if t.procs == nil {
		t.procs = map[string]*bgEntry{}
	}
	t.seq++
	id := mcpNewID("bg-")
	t.procs[id] = &bgEntry{id: id, seq: t.seq, p: p}
	var drop []*bgEntry
	if len(t.procs) > mcpMaxBackground {
		all := slices.SortedFunc(maps.Values(t.procs), func(a, b *bgEntry) int { return a.seq - b.seq })
		for _, e := range all {
			if len(t.procs) <= mcpMaxBackground {
				break
			}
			if mcpEnded(e.p.Done()) {
				delete(t.procs, e.id)
				drop = append(drop, e)
			}
		}
	}
	t.mu.Unlock()
	var errs []error
	for _, e := range drop {
		errs = append(errs, e.p.Close())
	}
	return id, errors.Join(errs...)
}

func (t *bgTable) get(id string) (*bgEntry, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.procs[id]
	if !ok {
		return nil, fmt.Errorf("no background process %q: start one with bash_start, which returns its id (ended ones are kept until %d newer ones exist)", id, mcpMaxBackground)
	}
	return e, nil
}

// closeAll ends and releases every background process.
func (t *bgTable) closeAll() error {
	t.mu.Lock()
	t.closed = true
	all := make([]*bgEntry, 0, len(t.procs))
	for _, e := range t.procs {
		all = append(all, e)
	}
	t.procs = nil
	t.mu.Unlock()
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for _, e := range all {
		wg.Go(func() {
			if err := e.p.Close(); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// mcpEnded reports whether ch is closed.
func mcpEnded(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func (s *mcpServer) addBashTools(server *mcp.Server) {
	ceiling := mcpShare * s.execCfg.MaxBackground
	addTool(s, server, &mcp.Tool{Name: "bash", Title: "Run a bash command",
		Description: "Runs one bash command in the foreground and returns its output and exit status: a fresh non-login bash -c " +
			"per call (no state survives but the file system), stdin from the null device, no pager, editor or password prompt " +
			"(NO_COLOR=1 TERM=dumb PAGER=cat GIT_TERMINAL_PROMPT=0). Each stream keeps its last 64000 bytes; a longer stream is " +
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

func (w *mcpWorld) bashTool(ctx context.Context, req *mcp.CallToolRequest, in bashIn) (string, bashOut, error) {
	max := w.exec.Config().MaxTimeout
	note := ""
	if in.TimeoutMs > max.Milliseconds() {
		note = fmt.Sprintf("[timeout_ms %d is above the limit maxTimeoutMs %d: %d applied]\n", in.TimeoutMs, max.Milliseconds(), max.Milliseconds())
		in.TimeoutMs = max.Milliseconds()
	}
	if in.TimeoutMs < 0 {
		return "", bashOut{}, bashCallError(&bash.RequestError{Field: "timeout_ms", Err: fmt.Errorf("%d is negative; omit it for the default", in.TimeoutMs)})
	}
	r := bash.Request{Command: in.Command, Timeout: time.Duration(in.TimeoutMs) * time.Millisecond}
	if in.Stdin != "" {
		r.Stdin = []byte(in.Stdin)
	}
	stop := w.s.progress(ctx, req, "bash")
	res, err := w.exec.Exec(ctx, r)
	stop()
	if err != nil {
		return "", bashOut{}, bashCallError(err)
	}
	return note + bash.Render(res, nil), bashOutOf(res), nil
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
	id, err := w.bg.add(p)
	if id == "" {
		return "", bashStartOut{}, errors.Join(err, p.Close())
	}
	if err != nil {
		w.s.log.Warn("release ended background processes", "err", err)
	}
	text := fmt.Sprintf("[started background process %s (pid %d); read its output with bash_read {\"id\":%q}, end it with bash_stop {\"id\":%q}]\n",
		id, p.Pid(), id, id)
	return text, bashStartOut{ID: id, Pid: p.Pid(), Command: p.Command()}, nil
}

func (w *mcpWorld) bashReadTool(ctx context.Context, req *mcp.CallToolRequest, in bashReadIn) (string, bashReadOut, error) {
	e, err := w.bg.get(in.ID)
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
		e.p.WaitOutput(wctx, bash.Offsets{Stdout: in.StdoutOffset, Stderr: in.StderrOffset}, 1) // its error is the read's below, or the wait's end
		cancel()
		stop()
	}
	d, err := e.p.ReadOutput(bash.Offsets{Stdout: in.StdoutOffset, Stderr: in.StderrOffset}, max)
	if err != nil {
		return "", bashReadOut{}, fmt.Errorf("[request refused: %v]", err)
	}
	out := bashReadOut{ID: e.id, Pid: d.Pid, Command: d.Command, Stdout: deltaOf(d.Stdout), Stderr: deltaOf(d.Stderr),
		Next: mcpOffsets{Stdout: d.Next.Stdout, Stderr: d.Next.Stderr}, Running: d.Result == nil, Done: d.Done()}
	if d.Result != nil {
		r := bashOutOf(*d.Result)
		out.Result = &r
	}
	return bash.RenderDelta(d), out, nil
}

func (w *mcpWorld) bashStopTool(ctx context.Context, _ *mcp.CallToolRequest, in bashIDIn) (string, bashStopOut, error) {
	e, err := w.bg.get(in.ID)
	if err != nil {
		return "", bashStopOut{}, err
	}
	if err := e.p.Close(); err != nil { // terminates the tree, bounded by the grace
		return "", bashStopOut{}, fmt.Errorf("[tool failure: background process %s (pid %d) could not be ended: %v]", e.id, e.p.Pid(), err)
	}
	res, err := e.p.Wait(ctx)
	if err != nil {
		return "", bashStopOut{}, fmt.Errorf("[tool failure: background process %s (pid %d): %v]", e.id, e.p.Pid(), err)
	}
	text := fmt.Sprintf("[background process %s (pid %d) has ended; its output stays readable with bash_read]\n", e.id, e.p.Pid())
	return text + bash.Render(res, nil), bashStopOut{ID: e.id, bashOut: bashOutOf(res)}, nil
}

// trimPartialStart drops the continuation bytes a cut stream starts with.
func trimPartialStart(p []byte) []byte {
	for i := 0; i < 3 && len(p) > 0 && p[0]&0xC0 == 0x80; i++ {
		p = p[1:]
	}
	return p
}
