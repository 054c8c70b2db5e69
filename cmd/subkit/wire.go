package main

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/subkit/subkit/bash"
	"github.com/subkit/subkit/coderuntime"
	"github.com/subkit/subkit/internal/utf8bridge"
	"github.com/subkit/subkit/procinspect"
	"github.com/subkit/subkit/subprocess"
)

// The wire vocabulary: the one set of JSON types that both the commands' --json output and
// subkit mcp's structured tool results are made of, so a field of one is a field of the
// other under the same name. The jsonschema tags describe the fields in the MCP tools'
// output schemas.

// streamOut is one collected output stream.
type streamOut struct {
	Tail       string `json:"tail" jsonschema:"the end of the stream (all of it unless truncated), as UTF-8"`
	TotalBytes int64  `json:"total_bytes" jsonschema:"bytes the stream produced"`
	Truncated  bool   `json:"truncated" jsonschema:"tail is not the whole stream"`
	SpillPath  string `json:"spill_path" jsonschema:"a private file holding the whole stream when it was truncated, or empty; read it with sed -n, grep or tail"`
}

// streamOf is a Service's stream result on the wire; a truncated tail starts at a whole
// character.
func streamOf(r subprocess.StreamResult) streamOut {
	tail := r.Tail
	if r.Truncated {
		tail = wholeStart(tail)
	}
	return streamOut{Tail: string(tail), TotalBytes: r.TotalBytes, Truncated: r.Truncated, SpillPath: r.SpillPath}
}

// outputOf is a code runtime's output on the wire.
func outputOf(o coderuntime.Output) streamOut {
	tail := o.Tail
	if o.Truncated {
		tail = string(wholeStart([]byte(tail)))
	}
	return streamOut{Tail: tail, TotalBytes: o.TotalBytes, Truncated: o.Truncated, SpillPath: o.SpillPath}
}

// exitOut is how a process ended: its status, or the signal that ended it.
type exitOut struct {
	ExitCode *int   `json:"exit_code" jsonschema:"the exit status; null when a signal ended it (or, for a bash call that went on in the background, while it runs)"`
	Signal   string `json:"signal" jsonschema:"the signal that ended it (SIGTERM, SIGKILL), or empty"`
}

func exitOf(code int, signal string) exitOut {
	if signal != "" {
		return exitOut{Signal: signal}
	}
	return exitOut{ExitCode: &code}
}

// runOut is how one run of a program went: the part of the result that exec, bash and code
// share.
type runOut struct {
	exitOut
	TimedOut   bool           `json:"timed_out" jsonschema:"the timeout expired and the whole tree was terminated"`
	TimeoutMs  int64          `json:"timeout_ms" jsonschema:"the timeout that applied, in milliseconds; 0: none"`
	Cancelled  bool           `json:"cancelled" jsonschema:"interrupted (Ctrl-C, SIGTERM, SIGHUP; under subkit mcp the client cancelled the call or the server shut down) and the whole tree was terminated"`
	PipesHeld  bool           `json:"pipes_held" jsonschema:"a process it started held the output open after it exited; what it wrote later is not here"`
	DurationMs int64          `json:"duration_ms"`
	Stdout     streamOut      `json:"stdout"`
	Stderr     streamOut      `json:"stderr"`
	Sandbox    *sandboxOutput `json:"sandbox,omitempty" jsonschema:"how it was confined, when it ran in the sandbox"`
}

// runOutOf is how a run ended (o) on the wire, with the timeout that applied, in milliseconds
// (0: none), and its streams: the one rendering of a subprocess.Outcome, for exec, bash and
// code alike.
func runOutOf(o subprocess.Outcome, timeoutMs int64, stdout, stderr streamOut) runOut {
	return runOut{
		exitOut: exitOf(o.ExitCode, o.Signal), TimedOut: o.TimedOut, TimeoutMs: timeoutMs, Cancelled: o.Cancelled,
		PipesHeld: o.PipesHeld, DurationMs: o.Duration.Milliseconds(), Stdout: stdout, Stderr: stderr,
		Sandbox: sandboxJSON(o.Sandbox),
	}
}

// execResult is a program's run: subkit exec's result.
type execResult struct {
	Argv []string `json:"argv" jsonschema:"the command line that ran"`
	Pid  int      `json:"pid" jsonschema:"the leader's pid, also its process group id"`
	runOut
}

func execResultOf(argv []string, r subprocess.Result, timeout time.Duration) execResult {
	return execResult{Argv: nonNil(argv), Pid: r.Pid,
		runOut: runOutOf(r.Outcome, timeout.Milliseconds(), streamOf(r.Stdout), streamOf(r.Stderr))}
}

// procOut names a process.
type procOut struct {
	Pid  int    `json:"pid"`
	Comm string `json:"comm" jsonschema:"the command name"`
}

// bashResult is a bash command's run: subkit bash's result, and the bash tools'.
type bashResult struct {
	execResult
	Command   string    `json:"command"`
	Lingering bool      `json:"lingering" jsonschema:"processes the command started still ran after the shell exited (a server &); subkit bash ends them as it exits, subkit mcp when they exit by themselves, the client leaves or the server shuts down"`
	Survivors []procOut `json:"survivors" jsonschema:"the lingering processes, as listed when the shell exited"`
}

func bashResultOf(r bash.Result) bashResult {
	out := bashResult{
		execResult: execResult{Argv: nonNil(r.Argv), Pid: r.Pid,
			runOut: runOutOf(r.Outcome, r.Timeout.Milliseconds(), streamOf(r.Stdout), streamOf(r.Stderr))},
		Command: r.Command, Lingering: r.Lingering, Survivors: []procOut{},
	}
	for _, p := range r.Survivors {
		out.Survivors = append(out.Survivors, procOut{Pid: p.Pid, Comm: p.Comm})
	}
	return out
}

// codeErrorOut is the uncaught exception or compile error that ended code.
type codeErrorOut struct {
	Name      string `json:"name" jsonschema:"the exception's class: ValueError, SyntaxError, TypeError"`
	Value     string `json:"value" jsonschema:"its message"`
	Traceback string `json:"traceback" jsonschema:"the traceback, paths relative to the run's directory"`
}

func codeErrorOf(e *coderuntime.CodeError) *codeErrorOut {
	if e == nil {
		return nil
	}
	return &codeErrorOut{Name: e.Name, Value: e.Value, Traceback: e.Traceback}
}

// backgroundErrorOut is an uncaught exception of code an earlier cell left running (a node
// timer or promise, a python3 thread), reported with the cell that ran when it was raised.
type backgroundErrorOut struct {
	Cell int `json:"cell" jsonschema:"the execution_count of the cell whose code started what raised it; 0 when none can be named"`
	codeErrorOut
}

// codeResult is a snippet's run: subkit code's result, and code_run's.
type codeResult struct {
	Language string `json:"language"`
	runOut
	Error *codeErrorOut `json:"error,omitempty" jsonschema:"the uncaught exception or syntax error that ended the code (python3, node); absent when none"`
}

// codeResultOf is r on the wire; timeout is the one that applied (noTimeout: none).
func codeResultOf(r coderuntime.Result, timeout time.Duration) codeResult {
	return codeResult{Language: string(r.Language), Error: codeErrorOf(r.Error),
		runOut: runOutOf(r.Outcome, timeoutMs(timeout), outputOf(r.Stdout), outputOf(r.Stderr))}
}

// cellValueOut is one result of a cell: the value of its trailing expression or a display.
type cellValueOut struct {
	Main      bool              `json:"main" jsonschema:"the value of the cell's trailing expression (else a display() call or a figure)"`
	Text      string            `json:"text" jsonschema:"its text/plain form"`
	MIMETypes []string          `json:"mime_types" jsonschema:"every MIME type the result has (image/png and image/jpeg ones are sent as image content)"`
	MIME      map[string]string `json:"mime,omitempty" jsonschema:"subkit code --cells: every MIME type's data (images base64); left out by subkit mcp, which sends images as image content"`
	FromCell  int               `json:"from_cell" jsonschema:"0 for the cell's own result; else the execution_count of the earlier cell whose code left running displayed it (a node callback, a python3 thread)"`
}

// cellResult is one cell's run in a code session: an execution of subkit code --cells, and
// code_session_run's result.
type cellResult struct {
	ID                      string               `json:"id,omitempty" jsonschema:"the code session's id"`
	ExecutionCount          int                  `json:"execution_count" jsonschema:"the cell's number in its interpreter: 1 after a start or restart"`
	Stdout                  streamOut            `json:"stdout"`
	Stderr                  streamOut            `json:"stderr"`
	Results                 []cellValueOut       `json:"results"`
	ResultsDropped          int                  `json:"results_dropped" jsonschema:"results left out beyond the session's bound"`
	Error                   *codeErrorOut        `json:"error,omitempty" jsonschema:"the exception the cell raised; absent when none"`
	BackgroundErrors        []backgroundErrorOut `json:"background_errors" jsonschema:"uncaught exceptions of code earlier cells left running (node callbacks and promises, python3 threads) raised during the cell or since the one before; they did not end this cell"`
	BackgroundErrorsDropped int                  `json:"background_errors_dropped" jsonschema:"background errors left out beyond 100 per cell"`
	Notes                   []string             `json:"notes" jsonschema:"what the session says about the cell besides its output: a GUI matplotlib backend replaced by the session's, a figure that could not be rendered"`
	TimedOut                bool                 `json:"timed_out"`
	Cancelled               bool                 `json:"cancelled" jsonschema:"interrupted by the caller (Ctrl-C; the client cancelled the call): the cell was interrupted"`
	Interrupted             bool                 `json:"interrupted" jsonschema:"SIGINT was sent to the interpreter during the cell"`
	Restarted               bool                 `json:"restarted" jsonschema:"the session's state is gone: the interpreter ended during the cell, or this cell ran in a fresh one"`
	InterpreterExit         *exitOut             `json:"interpreter_exit,omitempty" jsonschema:"how the interpreter ended, when it ended during the cell"`
	DurationMs              int64                `json:"duration_ms"`
}

// cellResultOf is ex on the wire, each result's text cut to maxText bytes (0: whole) and,
// with withMIME, its data of every MIME type.
func cellResultOf(id string, ex coderuntime.Execution, maxText int, withMIME bool) cellResult {
	out := cellResult{ID: id, ExecutionCount: ex.ExecutionCount, Stdout: outputOf(ex.Stdout), Stderr: outputOf(ex.Stderr),
		Results: []cellValueOut{}, ResultsDropped: ex.ResultsDropped, Error: codeErrorOf(ex.Error), TimedOut: ex.TimedOut,
		Cancelled: ex.Cancelled, Interrupted: ex.Interrupted, Restarted: ex.Restarted, DurationMs: ex.Duration.Milliseconds(),
		BackgroundErrors: []backgroundErrorOut{}, BackgroundErrorsDropped: ex.BackgroundErrorsDropped, Notes: nonNil(ex.Notes)}
	for _, e := range ex.BackgroundErrors {
		out.BackgroundErrors = append(out.BackgroundErrors, backgroundErrorOut{Cell: e.Cell, codeErrorOut: *codeErrorOf(&e.CodeError)})
	}
	if ex.InterpreterExit != nil {
		e := exitOf(ex.InterpreterExit.ExitCode, ex.InterpreterExit.Signal)
		out.InterpreterExit = &e
	}
	for _, r := range ex.Results {
		v := cellValueOut{Main: r.Main, Text: r.MIME["text/plain"], MIMETypes: slices.Sorted(maps.Keys(r.MIME)), FromCell: r.FromCell}
		if maxText > 0 {
			v.Text = capText(v.Text, maxText)
		}
		if withMIME {
			v.MIME = r.MIME
		}
		out.Results = append(out.Results, v)
	}
	return out
}

// treeProc is one process of a tree.
type treeProc struct {
	Pid    int    `json:"pid"`
	PPid   int    `json:"ppid"`
	Pgid   int    `json:"pgid" jsonschema:"process group (0 on Windows, which has none)"`
	Sid    int    `json:"sid" jsonschema:"session (0 on Windows, which has none)"`
	Tpgid  int    `json:"tpgid" jsonschema:"the foreground process group of its controlling terminal (0 without one, and on Windows)"`
	Start  uint64 `json:"start" jsonschema:"the raw start token (Linux: clock ticks since boot; macOS: microseconds since the epoch; Windows: the creation FILETIME, 0 for a process that cannot be opened); pid and start name a process exactly"`
	Comm   string `json:"comm" jsonschema:"the command name"`
	Depth  int    `json:"depth" jsonschema:"0 for the root, 1 for its children, ..."`
	Zombie bool   `json:"zombie" jsonschema:"exited, waiting to be reaped (Windows: exited, its process object still held by a handle)"`
}

// treeOf is procs (the root first, each process after its parent) on the wire.
func treeOf(procs []procinspect.Proc) []treeProc {
	out := make([]treeProc, 0, len(procs))
	depth := map[int]int{}
	for i, p := range procs {
		d := 0
		if i > 0 {
			d = depth[p.PPid] + 1
		}
		depth[p.Pid] = d
		out = append(out, treeProc{Pid: p.Pid, PPid: p.PPid, Pgid: p.Pgid, Sid: p.Sid, Tpgid: p.Tpgid, Start: p.Start,
			Comm: p.Comm, Depth: d, Zombie: p.Zombie})
	}
	return out
}

// wholeStart drops the end of a code point whose start was cut off, which a tail or a read
// from an offset may start with.
func wholeStart(p []byte) []byte { return utf8bridge.TrimStart(p) }

// capText keeps the first max bytes of s, ending at a whole character, and says how many it
// left out.
func capText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := utf8bridge.WholeLen([]byte(s[:max]))
	return s[:cut] + fmt.Sprintf("... [%d more bytes left out]", len(s)-cut)
}
