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
	Command   string            `json:"command" jsonschema:"bash source, run by a fresh non-login bash -c in a process group of its own; no state survives between calls but the file system"`
	TimeoutMs int64             `json:"timeout_ms,omitempty" jsonschema:"run in the foreground and kill the whole tree (SIGTERM, then SIGKILL) after this many milliseconds; above maxTimeoutMs it is lowered to it, and timeout_ms in the result says what applied. Without it the command is never killed by a timeout: after wait_ms it goes on in the background"`
	WaitMs    int64             `json:"wait_ms,omitempty" jsonschema:"without timeout_ms: how long the call waits for the command to end (default 30000, below the 60 s after which common MCP clients give up on a call, or timeoutMs minus 1 when that is less; at most timeoutMs minus 1, 119999 by default). A command still running then is not killed: it goes on as a background process of this client, and the answer gives its id, pid and output so far, for bash_read, bash_stop and bash_list. Not with timeout_ms"`
	Stdin     string            `json:"stdin,omitempty" jsonschema:"text written to the command's standard input, which is then closed; without it stdin is the null device"`
	Cwd       string            `json:"cwd,omitempty" jsonschema:"the directory the command starts in (default: the server's, the configuration's cwd); a relative path is relative to that directory; it must exist"`
	Env       map[string]string `json:"env,omitempty" jsonschema:"variables set in the command's environment, over the server's defaults (names made of letters, digits and _, not starting with a digit; not the managed prefix, DSH_ unless the configuration's managedPrefix says otherwise)"`
}

// Bounds of the bash tool's wait.
const mcpDefaultBashWait = 30 * time.Second // under the 60 s request timeout of common MCP clients

// mcpBashArgs names the bash.Request fields by the tools' arguments.
var mcpBashArgs = map[string]string{"Command": "command", "Env": "env", "Dir": "cwd"}

// bashCallError is the tool error of a call that never ran: the executor's own wording, with
// the request's fields named by the tool's arguments.
func (w *mcpWorld) bashCallError(err error) error {
	var re *bash.RequestError
	if errors.As(err, &re) {
		c := *re
		if arg, ok := mcpBashArgs[re.Field]; ok {
			c.Field = arg
		}
		if re.Field == "Env" && strings.HasPrefix(re.Key, w.exec.Config().ManagedPrefix) {
			c.Err = errors.New("names with the managed prefix are the server's own and cannot be set by a call; choose another name")
		}
		err = &c
	}
	return errors.New(bash.Render(bash.Result{}, err))
}

type bashStartIn struct {
	Command string            `json:"command" jsonschema:"bash source, run in the background by a fresh bash -c, without a timeout, until it exits or bash_stop ends it"`
	Stdin   string            `json:"stdin,omitempty" jsonschema:"text written to its standard input, which is then closed; without it stdin is the null device"`
	Cwd     string            `json:"cwd,omitempty" jsonschema:"the directory it starts in (default: the server's, the configuration's cwd); a relative path is relative to that directory; it must exist"`
	Env     map[string]string `json:"env,omitempty" jsonschema:"variables set in its environment, over the server's defaults (not the managed prefix, DSH_ unless the configuration's managedPrefix says otherwise)"`
}

// bashOut is the bash tool's result: the command's, or, when it outlived its wait, what it
// has done so far and the background process it goes on as.
type bashOut struct {
	bashResult
	Background *bashMovedOut `json:"background,omitempty" jsonschema:"present when the command outlived wait_ms and goes on as a background process; the other fields then say what it has done so far (exit_code null, the output so far, timeout_ms 0)"`
}

type bashMovedOut struct {
	ID     string     `json:"id" jsonschema:"the background process's id, for bash_read, bash_stop and bash_list"`
	WaitMs int64      `json:"wait_ms" jsonschema:"the wait it outlived, in milliseconds"`
	Next   mcpOffsets `json:"next" jsonschema:"the offsets to pass to bash_read as stdout_offset and stderr_offset to read on after the output shown"`
}

type bashStartOut struct {
	ID      string `json:"id" jsonschema:"the background process's id, for bash_read and bash_stop"`
	Pid     int    `json:"pid" jsonschema:"the shell's pid, also its process group id"`
	Command string `json:"command"`
}

type bashReadIn struct {
	ID           string `json:"id" jsonschema:"the id bash_start (or a bash call that outlived its wait) returned"`
	StdoutOffset int64  `json:"stdout_offset,omitempty" jsonschema:"whole-stream byte offset of stdout to read from: 0 (the default) for the start, the previous read's next.stdout to read on"`
	StderrOffset int64  `json:"stderr_offset,omitempty" jsonschema:"whole-stream byte offset of stderr to read from"`
	TailBytes    int    `json:"tail_bytes,omitempty" jsonschema:"tail mode: read the last this many bytes of each stream (as far as it has got) instead of from the offsets, which must then be left out; at most max_bytes' limit 1048576"`
	MaxBytes     int    `json:"max_bytes,omitempty" jsonschema:"at most this many bytes of each stream (default: the configuration's maxOutputBytes, 64000; at most 1048576)"`
	WaitMs       int64  `json:"wait_ms,omitempty" jsonschema:"wait up to this many milliseconds before reading, for what until names (default 0: read at once, or 30000 with until exit; at most 600000)"`
	Until        string `json:"until,omitempty" jsonschema:"what wait_ms waits for: output (the default) returns on the first new byte or the process's end; exit returns once the process has ended, or wait_ms has passed"`
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
	ID string `json:"id" jsonschema:"the id bash_start (or a bash call that outlived its wait) returned"`
}

type bashListIn struct{}

// bashListEntry is one background process in bash_list.
type bashListEntry struct {
	ID      string `json:"id"`
	Pid     int    `json:"pid" jsonschema:"the shell's pid, also its process group id"`
	Command string `json:"command"`
	Running bool   `json:"running" jsonschema:"it still runs; else exit_code, signal and cancelled say how it ended"`
	exitOut
	Cancelled   bool   `json:"cancelled" jsonschema:"bash_stop (or the server) ended it"`
	StdoutBytes int64  `json:"stdout_bytes" jsonschema:"bytes of stdout so far"`
	StderrBytes int64  `json:"stderr_bytes" jsonschema:"bytes of stderr so far"`
	StartedAt   string `json:"started_at" jsonschema:"when it started, RFC 3339 in UTC"`
}

type bashListOut struct {
	Processes []bashListEntry `json:"processes" jsonschema:"this client's background processes, running or ended and kept, oldest first"`
}

type bashStopOut struct {
	ID string `json:"id"`
	bashResult
}

// bgProc is a background process of a client, with when it started.
type bgProc struct {
	*bash.Process
	started time.Time
}

// newBackground is a client's registry of background processes by id, ended or not: an
// ended one is still read by offset until a new one needs its place (the least recently used
// ended one goes past mcpMaxBackground entries; with none ended, the new one is refused).
func newBackground() *registry.Registry[*bgProc] {
	return registry.New(registry.Config[*bgProc]{NewID: func() string { return mcpNewID("bg-") }, Max: mcpMaxBackground,
		Ended: func(p *bgProc) bool { return done.Closed(p.Done()) }})
}

// background is the client's background process of id.
func (w *mcpWorld) background(id string) (*bgProc, error) {
	p, ok := w.bg.Get(id)
	if !ok {
		return nil, fmt.Errorf("no background process %q: bash_list lists this client's; bash_start returns the id of a new one (an ended one is kept until a new one needs its place, past %d kept)", id, mcpMaxBackground)
	}
	return p, nil
}

// admitBackground is the server-wide admission of one more background process of w: a
// client at its own maxBackground is refused by its executor, others under the ceiling
// shared by all clients. release gives the place back once the process is counted.
func (w *mcpWorld) admitBackground() (release func(), err error) {
	max := w.s.execCfg.MaxBackground
	if w.exec.Stats().Running >= max {
		return func() {}, nil // the executor refuses it, in its own words
	}
	return w.s.admit("background processes running", mcpShare*max, func(x *mcpWorld) int { return x.exec.Stats().Running })
}

func (s *mcpServer) addBashTools(server *mcp.Server) {
	addTool(s, server, &mcp.Tool{Name: "bash", Title: "Run a bash command",
		Description: "Runs one bash command and returns its output and exit status: a fresh non-login bash -c " +
			"per call (no state survives but the file system), stdin from the null device, no colour, pager, editor or password " +
			"prompt, Python's output unbuffered (" + strings.Join(modelenv.Pipes(), " ") + "). Each stream keeps its last 64000 bytes; a longer stream is " +
			"kept whole in a file the result names. A command still running after wait_ms (30 s) is not killed: it goes on in the " +
			"background and the answer gives its id and output so far (follow it with bash_read, end it with bash_stop). With " +
			"timeout_ms it runs in the foreground instead and is killed at the timeout. On cancellation the whole process tree is " +
			"terminated. For stateful work (cd, exports, a REPL) use shell_open; for long-running servers use bash_start.",
	}, (*mcpWorld).bashTool)
	addTool(s, server, &mcp.Tool{Name: "bash_start", Title: "Start a background command",
		Description: "Starts a bash command in the background and returns its id at once. It runs without a timeout until it exits " +
			"or bash_stop ends it (with everything it started), or the client leaves. Read its output with bash_read; bash_list lists them.",
	}, func(w *mcpWorld, ctx context.Context, req *mcp.CallToolRequest, in bashStartIn) (string, bashStartOut, error) {
		release, err := w.admitBackground()
		if err != nil {
			return "", bashStartOut{}, err
		}
		defer release()
		return w.bashStartTool(ctx, req, in)
	})
	addTool(s, server, &mcp.Tool{Name: "bash_read", Title: "Read a background command's output",
		Description: "Reads a background command's stdout and stderr from whole-stream byte offsets (the previous read's next " +
			"offsets read on; 0 reads from the start again) or, with tail_bytes, the last bytes of each; optionally waiting first " +
			"for new output or (until exit) for its end, and says whether it still runs and, once ended, how.",
		InputSchema: enumSchema[bashReadIn]("until", "output", "exit"),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, (*mcpWorld).bashReadTool)
	addTool(s, server, &mcp.Tool{Name: "bash_stop", Title: "Stop a background command",
		Description: "Ends a background command and everything it started (SIGTERM, then SIGKILL after the grace) and returns " +
			"how it ended. Its output stays readable with bash_read.",
	}, (*mcpWorld).bashStopTool)
	addTool(s, server, &mcp.Tool{Name: "bash_list", Title: "List background commands",
		Description: "Lists this client's background processes (from bash_start, and bash calls that outlived their wait), oldest " +
			"first: id, pid, command, running or how it ended, bytes of output so far per stream, when it started.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, (*mcpWorld).bashListTool)
}

func (w *mcpWorld) bashTool(ctx context.Context, req *mcp.CallToolRequest, in bashIn) (string, bashOut, error) {
	cfg := w.exec.Config()
	note := ""
	if in.TimeoutMs > cfg.MaxTimeout.Milliseconds() {
		note = fmt.Sprintf("[timeout_ms %d is above the limit maxTimeoutMs %d: %d applied]\n", in.TimeoutMs, cfg.MaxTimeout.Milliseconds(), cfg.MaxTimeout.Milliseconds())
		in.TimeoutMs = cfg.MaxTimeout.Milliseconds()
	}
	switch {
	case in.TimeoutMs < 0:
		return "", bashOut{}, w.bashCallError(&bash.RequestError{Field: "timeout_ms", Err: fmt.Errorf("%d is negative; omit it for the default", in.TimeoutMs)})
	case in.WaitMs < 0:
		return "", bashOut{}, w.bashCallError(&bash.RequestError{Field: "wait_ms", Err: fmt.Errorf("%d is negative; omit it for the default %d", in.WaitMs, mcpDefaultBashWait.Milliseconds())})
	case in.WaitMs > 0 && in.TimeoutMs > 0:
		return "", bashOut{}, w.bashCallError(&bash.RequestError{Field: "wait_ms", Err: errors.New("applies without timeout_ms only: give timeout_ms to run the command in the foreground until it, or wait_ms to have it go on in the background after the wait")})
	case in.WaitMs >= cfg.Timeout.Milliseconds():
		return "", bashOut{}, w.bashCallError(&bash.RequestError{Field: "wait_ms", Err: fmt.Errorf("%d is not below timeoutMs %d, the longest a command stays in the foreground; give at most %d", in.WaitMs, cfg.Timeout.Milliseconds(), cfg.Timeout.Milliseconds()-1)})
	}
	r := bash.Request{Command: in.Command, Timeout: time.Duration(in.TimeoutMs) * time.Millisecond, Dir: in.Cwd, Env: in.Env}
	if in.Stdin != "" {
		r.Stdin = []byte(in.Stdin)
	}
	stop := w.s.progress(ctx, req, "bash")
	if in.TimeoutMs > 0 { // the foreground, killed at the timeout
		res, err := w.exec.Exec(ctx, r)
		stop()
		if err != nil {
			return "", bashOut{}, w.bashCallError(err)
		}
		return note + bash.Render(res, nil), bashOut{bashResult: bashResultOf(res)}, nil
	}

	wait := min(mcpDefaultBashWait, cfg.Timeout-time.Millisecond) // below the timeout, or the command would be killed at it
	if in.WaitMs > 0 {
		wait = time.Duration(in.WaitMs) * time.Millisecond
	}
	var refused error // why the command could not go to the background, when it could not
	admit := func() (func(), error) {
		if n := w.exec.Stats().Running; n >= cfg.MaxBackground {
			refused = fmt.Errorf("%d background processes of this client are running, the maxBackground limit", n)
			return nil, refused
		}
		release, err := w.admitBackground()
		if err != nil {
			refused = errors.New("all clients of this server together have their limit of background processes running")
		}
		return release, err
	}
	started := time.Now()
	res, p, err := w.exec.ExecOrStart(ctx, r, wait, admit)
	stop()
	if err != nil {
		return "", bashOut{}, w.bashCallError(err)
	}
	if p == nil {
		if refused != nil {
			note += fmt.Sprintf("[the command outlived the wait of %v but could not go on in the background (%v), so it ran in the foreground under the timeout]\n", wait, refused)
		}
		return note + bash.Render(res, nil), bashOut{bashResult: bashResultOf(res)}, nil
	}
	return w.moved(ctx, &bgProc{Process: p, started: started}, wait)
}

// keep registers p as a background process and returns its id. When it cannot, it ends p and
// says why: full when the registry has no room.
func (w *mcpWorld) keep(p *bgProc, full string) (string, error) {
	slot, evictErr, err := w.bg.Reserve()
	switch {
	case errors.Is(err, registry.ErrFull):
		return "", errors.Join(errors.New(full), p.Close())
	case err != nil:
		return "", errors.Join(errLeaving, p.Close())
	}
	defer slot.Cancel() // after a refused Fill, once p is closed: the registry's Close waits for it
	if evictErr != nil {
		w.s.log.Warn("release an ended background process", "err", evictErr)
	}
	if err := slot.Fill(p); err != nil {
		return "", errors.Join(errLeaving, p.Close())
	}
	return slot.ID(), nil
}

// moved registers p, a bash command that outlived its wait, as a background process, and
// answers with its id and its output so far (the last maxOutputBytes of each stream).
func (w *mcpWorld) moved(ctx context.Context, p *bgProc, wait time.Duration) (string, bashOut, error) {
	// Past the executor's maxBackground only when that is above mcpMaxBackground.
	id, err := w.keep(p, fmt.Sprintf("[the command outlived its wait, but %d background processes are kept and none has ended, so it was ended; end one with bash_stop]", mcpMaxBackground))
	if err != nil {
		return "", bashOut{}, err
	}
	if ctx.Err() != nil { // the client cancelled (or left) as the wait ended: end it, as a cancel does
		w.bg.Remove(id)
		if err := p.Close(); err != nil {
			return "", bashOut{}, fmt.Errorf("[tool failure: the cancelled command (pid %d) could not be ended: %v]", p.Pid(), err)
		}
		wctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		res, err := p.Wait(wctx)
		if err != nil {
			return "", bashOut{}, fmt.Errorf("[tool failure: the cancelled command (pid %d): %v]", p.Pid(), err)
		}
		return bash.Render(res, nil), bashOut{bashResult: bashResultOf(res)}, nil
	}
	d, skipped, err := tailRead(p.Process, w.exec.Config().MaxOutputBytes)
	if err != nil {
		return "", bashOut{}, fmt.Errorf("[tool failure: background process %s (pid %d) goes on, but its output could not be read: %v; read it with bash_read {\"id\":%q}]", id, p.Pid(), err, id)
	}
	var b strings.Builder
	b.WriteString(skippedNote(skipped))
	b.WriteString(bash.RenderDelta(d))
	fmt.Fprintf(&b, "[the command was still running after %v, so it was not killed: it goes on in the background as %s (pid %d). "+
		"Wait for its end and read on with bash_read {\"id\":%q,\"stdout_offset\":%d,\"stderr_offset\":%d,\"until\":\"exit\",\"wait_ms\":30000}; "+
		"end it with bash_stop {\"id\":%q}; bash_list lists your background processes]\n",
		wait, id, p.Pid(), id, d.Next.Stdout, d.Next.Stderr, id)
	out := bashOut{Background: &bashMovedOut{ID: id, WaitMs: wait.Milliseconds(), Next: mcpOffsets{Stdout: d.Next.Stdout, Stderr: d.Next.Stderr}}}
	out.bashResult = bashResult{
		execResult: execResult{Argv: []string{}, Pid: p.Pid(), runOut: runOut{
			exitOut: exitOut{}, DurationMs: time.Since(p.started).Milliseconds(),
			Stdout: streamSoFar(d.Stdout), Stderr: streamSoFar(d.Stderr),
		}},
		Command: p.Command(), Survivors: []procOut{},
	}
	if d.Result != nil { // it ended as it went to the background
		out.bashResult = bashResultOf(*d.Result)
	}
	return b.String(), out, nil
}

// streamSoFar is a running stream's output so far, read as a tail, on the wire.
func streamSoFar(d subprocess.Delta) streamOut {
	data := d.Data
	if d.From > 0 {
		data = wholeStart(data)
	}
	return streamOut{Tail: string(data), TotalBytes: d.Total, Truncated: d.From > 0}
}

// tailRead reads the last n bytes of each stream of p (as far as they have got), and says
// how many bytes before them it skipped.
func tailRead(p *bash.Process, n int) (bash.Delta, bash.Offsets, error) {
	d, err := p.ReadOutput(bash.Offsets{}, 1) // for the totals
	if err != nil {
		return bash.Delta{}, bash.Offsets{}, err
	}
	from := bash.Offsets{Stdout: max(0, d.Stdout.Total-int64(n)), Stderr: max(0, d.Stderr.Total-int64(n))}
	d, err = p.ReadOutput(from, n)
	return d, from, err
}

// skippedNote says which earlier output a tail read left out, and how to read it.
func skippedNote(skipped bash.Offsets) string {
	var b strings.Builder
	for _, s := range []struct {
		name string
		n    int64
	}{{"stdout", skipped.Stdout}, {"stderr", skipped.Stderr}} {
		if s.n > 0 {
			fmt.Fprintf(&b, "[the first %d bytes of %s are left out here; read them with bash_read %s_offset 0]\n", s.n, s.name, s.name)
		}
	}
	return b.String()
}

func (w *mcpWorld) bashStartTool(ctx context.Context, _ *mcp.CallToolRequest, in bashStartIn) (string, bashStartOut, error) {
	r := bash.Request{Command: in.Command, Dir: in.Cwd, Env: in.Env}
	if in.Stdin != "" {
		r.Stdin = []byte(in.Stdin)
	}
	started := time.Now()
	p, err := w.exec.Start(ctx, r)
	if err != nil {
		return "", bashStartOut{}, w.bashCallError(err)
	}
	id, err := w.keep(&bgProc{Process: p, started: started}, fmt.Sprintf("[request refused: %d background processes are kept and none has ended; end one with bash_stop]", mcpMaxBackground))
	if err != nil {
		return "", bashStartOut{}, err
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
	switch {
	case in.StdoutOffset < 0 || in.StderrOffset < 0:
		return "", bashReadOut{}, errors.New("stdout_offset and stderr_offset are byte offsets from 0; a negative one is not")
	case in.TailBytes < 0:
		return "", bashReadOut{}, fmt.Errorf("tail_bytes %d is negative; omit it to read from the offsets", in.TailBytes)
	case in.TailBytes > mcpMaxReadBytes:
		return "", bashReadOut{}, fmt.Errorf("tail_bytes %d is above the limit %d", in.TailBytes, mcpMaxReadBytes)
	case in.TailBytes > 0 && (in.StdoutOffset != 0 || in.StderrOffset != 0):
		return "", bashReadOut{}, errors.New("tail_bytes reads the end of each stream: leave out stdout_offset and stderr_offset with it")
	}
	def := time.Duration(0)
	switch in.Until {
	case "", "output":
	case "exit":
		def = mcpDefaultBashWait
	default:
		return "", bashReadOut{}, fmt.Errorf("until %q is neither output nor exit", in.Until)
	}
	wait, err := millis("wait_ms", in.WaitMs, def, mcpMaxWait)
	if err != nil {
		return "", bashReadOut{}, err
	}
	from := bash.Offsets{Stdout: in.StdoutOffset, Stderr: in.StderrOffset}
	if wait > 0 { // until there is new output or the end (until exit: the end), within wait; then read as usual
		stop := w.s.progress(ctx, req, "bash_read")
		wctx, cancel := context.WithTimeout(ctx, wait)
		if in.Until == "exit" {
			select {
			case <-p.Done():
			case <-wctx.Done():
			}
		} else if in.TailBytes == 0 {
			p.WaitOutput(wctx, from, 1) // its error is the read's below, or the wait's end
		} else {
			d, err := p.ReadOutput(bash.Offsets{}, 1) // the totals: a tail read waits for bytes past them
			if err == nil {
				p.WaitOutput(wctx, bash.Offsets{Stdout: d.Stdout.Total, Stderr: d.Stderr.Total}, 1)
			}
		}
		cancel()
		stop()
	}
	var d bash.Delta
	var skipped bash.Offsets
	if in.TailBytes > 0 {
		d, skipped, err = tailRead(p.Process, min(in.TailBytes, max))
	} else {
		d, err = p.ReadOutput(from, max)
	}
	if err != nil {
		var re *bash.RequestError
		if errors.As(err, &re) && strings.HasPrefix(re.Field, "Offsets.") {
			return "", bashReadOut{}, fmt.Errorf("[request refused: %s_offset: %v]", strings.ToLower(strings.TrimPrefix(re.Field, "Offsets.")), re.Err)
		}
		return "", bashReadOut{}, fmt.Errorf("[request refused: %v]", err)
	}
	out := bashReadOut{ID: in.ID, Pid: d.Pid, Command: d.Command, Stdout: deltaOf(d.Stdout), Stderr: deltaOf(d.Stderr),
		Next: mcpOffsets{Stdout: d.Next.Stdout, Stderr: d.Next.Stderr}, Running: d.Result == nil, Done: d.Done()}
	if d.Result != nil {
		r := bashResultOf(*d.Result)
		out.Result = &r
	}
	text := skippedNote(skipped) + bash.RenderDelta(d)
	if in.Until == "exit" && d.Result == nil {
		text += fmt.Sprintf("[it had not ended after wait_ms %d; call bash_read with until exit again to go on waiting]\n", wait.Milliseconds())
	}
	return text, out, nil
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

func (w *mcpWorld) bashListTool(_ context.Context, _ *mcp.CallToolRequest, _ bashListIn) (string, bashListOut, error) {
	out := bashListOut{Processes: []bashListEntry{}}
	var b strings.Builder
	for _, e := range w.bg.List() {
		d, err := e.Value.ReadOutput(bash.Offsets{}, 1) // for the totals and the result
		if err != nil {
			return "", bashListOut{}, fmt.Errorf("[tool failure: background process %s (pid %d) could not be read: %v]", e.ID, e.Value.Pid(), err)
		}
		x := bashListEntry{ID: e.ID, Pid: e.Value.Pid(), Command: e.Value.Command(), Running: d.Result == nil,
			StdoutBytes: d.Stdout.Total, StderrBytes: d.Stderr.Total, StartedAt: e.Value.started.UTC().Format(time.RFC3339)}
		state := fmt.Sprintf("running for %v", time.Since(e.Value.started).Round(time.Second))
		if r := d.Result; r != nil {
			x.exitOut, x.Cancelled = exitOf(r.ExitCode, r.Signal), r.Cancelled
			switch {
			case r.Cancelled:
				state = "stopped"
			case r.Signal != "":
				state = "killed by " + r.Signal
			default:
				state = fmt.Sprintf("exited %d", r.ExitCode)
			}
		}
		out.Processes = append(out.Processes, x)
		fmt.Fprintf(&b, "%s pid %d, %s, started %s, stdout %d bytes, stderr %d bytes: %s\n",
			x.ID, x.Pid, state, x.StartedAt, x.StdoutBytes, x.StderrBytes, oneLine(x.Command, 200))
	}
	if len(out.Processes) == 0 {
		return "[no background processes: bash_start starts one, and a bash call that outlives its wait becomes one]\n", out, nil
	}
	return b.String(), out, nil
}

// oneLine is s on one line, cut to max bytes.
func oneLine(s string, max int) string { return capText(strings.Join(strings.Fields(s), " "), max) }
