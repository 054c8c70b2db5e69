package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/subkit/subkit/coderuntime"
	"github.com/subkit/subkit/sandbox"
	"github.com/subkit/subkit/subprocess"
)

const codeUsage = `usage: subkit code --lang python3|node|bash [--timeout DUR] [--grace DUR] [--tail-bytes N]
                   [--stdin-file F] [--interpreter PROGRAM] [--json] [SANDBOX FLAGS] (CODE | -)
       subkit code --lang python3|node --cells FILE [--keep-going] [--timeout DUR] [--grace DUR]
                   [--tail-bytes N] [--interpreter PROGRAM] [--json] [SANDBOX FLAGS]
SANDBOX FLAGS: --sandbox [--writable DIR]... [--hidden PATH]... [--no-default-hidden]
                   [--allow-unix-socket PATH]... [--protected PATH]... [--no-default-protected]
                   [--network on|off|allow] [--allow HOST]... [--deny HOST]...

Runs CODE (or the code read from stdin, for -) in a fresh private directory with the language's
interpreter, stdin from the null device (or --stdin-file), a credential-scrubbed environment
and bounded output. On timeout or Ctrl-C the whole tree gets SIGTERM, then SIGKILL after the
grace (a second Ctrl-C: at once); whatever the code leaves running is ended too. --timeout 0
means none. --sandbox confines the interpreter and everything the code starts (Linux), as for
subkit bash.

With --json it prints one JSON object and exits 0 once the code has run (130 when interrupted):
  {"language","exit_code"(null when signalled),"signal","timed_out","timeout_ms","cancelled",
   "pipes_held","duration_ms","stdout":{"tail","total_bytes","truncated","spill_path"},
   "stderr":{...},"sandbox":{...}(as subkit exec's, with --sandbox),
   "error":{"name","value","traceback"} (only when the code raised or did not compile)}
Without it, it prints the tails (stdout to stdout, stderr to stderr, where the interpreter's
own traceback is), notes a truncation on stderr, and exits with the code's status.

With --cells, FILE's cells (split at lines that start with "# %%", or "// %%" for node; cells
marked "# %% [markdown]" and empty ones are skipped; - reads stdin) run one after the other in
one session: one interpreter whose state (variables, imports, the working directory) the cells
share, as in a notebook. A cell that raises stops the run unless --keep-going; --timeout bounds
each cell (it is then interrupted; an interpreter deaf to the interrupt for the grace is
restarted). With --json it prints, and exits 0 once the cells ran (130 when interrupted):
  {"language","cancelled","timeout_ms","executions":[{"execution_count","stdout":{...},
   "stderr":{...},"results":[{"main","text","mime_types","mime":{"text/plain",...},"from_cell"}],
   "results_dropped","error":{"name","value","traceback"}(only when the cell raised),
   "background_errors":[{"cell","name","value","traceback"}],"background_errors_dropped","notes",
   "timed_out","cancelled","interrupted","restarted",
   "interpreter_exit":{"exit_code","signal"}(only when it ended during the cell),"duration_ms"}]}
A result's from_cell names the earlier cell whose code left running (a node callback, a python3
thread) displayed it (0: the cell's own); background_errors are the uncaught exceptions of such
code, each naming the cell that started it; notes are what the session says besides the output
(a GUI matplotlib backend replaced, a figure that could not be rendered).
Without it, it prints each cell's stdout and results (text/plain; other MIME types named; "[from
cell N]" before one an earlier cell's code displayed) to stdout, its stderr, error traceback,
background errors, notes and how the interpreter ended (a signal, an exit status) to stderr, and
exits 0, 1 when a cell raised or ended the interpreter, 124 when one timed out, 130 when
interrupted; background errors leave the status as it is. An interpreter that is not found is
kind not_found, exit 127.

flags:
`

func cmdCode(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("code", flag.ContinueOnError)
	var (
		lang        = fs.String("lang", "", "language: python3, node or bash (required)")
		timeout     = fs.Duration("timeout", coderuntime.DefaultTimeout, "terminate the run (with --cells: interrupt a cell) after this long; 0: no timeout")
		grace       = fs.Duration("grace", subprocess.DefaultGrace, "wait between SIGTERM and SIGKILL, and for pipes to drain")
		tailBytes   = fs.Int("tail-bytes", subprocess.DefaultTailBytes, "bytes of each stream kept")
		stdinFile   = fs.String("stdin-file", "", "file whose bytes become the code's stdin, or - for this process's stdin")
		interpreter = fs.String("interpreter", "", "program that runs the code (default: the language's, from PATH)")
		asJSON      = fs.Bool("json", false, "print one JSON object")
		cells       = fs.String("cells", "", "run FILE's cells (split at \"# %%\" lines; - for stdin) in one session")
		keepGoing   = fs.Bool("keep-going", false, "with --cells: run the cells after one that raised")
	)
	var sb sandboxFlags
	sb.register(fs)
	fail := func(kind string, code int, err error) int {
		return reportError(stdout, stderr, *asJSON, "code", kind, code, err)
	}
	if help, err := parseFlags(fs, args, codeUsage, stdout); help {
		return 0
	} else if err != nil {
		return fail("invalid", exitUsage, err)
	}
	policy, err := sb.policy(fs)
	if err != nil {
		return fail("invalid", exitUsage, err)
	}
	switch {
	case *lang == "":
		return fail("invalid", exitUsage, errors.New("--lang is required: python3, node or bash"))
	case *cells != "" && fs.NArg() != 0:
		return fail("invalid", exitUsage, errors.New("give the code either as --cells FILE or as one argument, not both"))
	case *cells != "" && *stdinFile != "":
		return fail("invalid", exitUsage, errors.New("--stdin-file does not go with --cells: a session's stdin is the null device"))
	case *cells == "" && *keepGoing:
		return fail("invalid", exitUsage, errors.New("--keep-going goes with --cells"))
	case *cells == "" && fs.NArg() != 1:
		return fail("invalid", exitUsage, errors.New("give the code as one argument, or - to read it from stdin"))
	case *timeout < 0 || *grace <= 0:
		return fail("invalid", exitUsage, errors.New("--timeout must not be negative (0: none) and --grace must be positive"))
	case *tailBytes <= 0:
		return fail("invalid", exitUsage, fmt.Errorf("--tail-bytes %d must be positive", *tailBytes))
	case fs.Arg(0) == "-" && *stdinFile == "-":
		return fail("invalid", exitUsage, errors.New("stdin cannot be both the code (-) and its input (--stdin-file -)"))
	}
	applied := *timeout
	if applied == 0 {
		applied = noTimeout
	}
	if *cells != "" {
		return runCells(ctx, cellsRun{
			lang: coderuntime.Language(*lang), file: *cells, keepGoing: *keepGoing, asJSON: *asJSON,
			timeout: applied, grace: *grace, tailBytes: *tailBytes, interpreter: *interpreter, policy: policy,
		}, stdin, stdout, stderr)
	}
	req := coderuntime.Request{
		Language: coderuntime.Language(*lang), Code: fs.Arg(0),
		Timeout: applied, Grace: *grace, Interpreter: *interpreter,
		StdoutBytes: *tailBytes, StderrBytes: *tailBytes,
	}
	if req.Code == "-" {
		code, err := io.ReadAll(stdin)
		if err != nil {
			return fail("invalid", exitUsage, fmt.Errorf("read the code from stdin: %w", err))
		}
		req.Code = string(code)
	}
	if *stdinFile != "" {
		data, err := readStdinFile(*stdinFile, stdin)
		if err != nil {
			return fail("invalid", exitUsage, err)
		}
		req.Stdin = data
	}

	rt, stop, err := codeRuntime(ctx, policy)
	if err != nil {
		kind, code := startFailure(err)
		return fail(kind, code, err)
	}
	defer stop()
	res, err := rt.Run(ctx, req)
	if err != nil {
		switch {
		case errors.Is(err, coderuntime.ErrRuntimeUnavailable):
			return fail("not_found", exitNotFound, err)
		case errors.Is(err, coderuntime.ErrInvalid), errors.Is(err, coderuntime.ErrUnsupportedLanguage):
			return fail("invalid", exitUsage, err)
		case errors.Is(err, context.Canceled):
			return fail("cancelled", exitCancelled, err)
		}
		return fail("internal", exitFailure, err)
	}
	if *asJSON {
		out := codeResultOf(res, applied)
		writeJSON(stdout, out)
		if res.Cancelled {
			return exitCancelled
		}
		return 0
	}
	io.WriteString(stdout, res.Stdout.Tail)
	io.WriteString(stderr, res.Stderr.Tail)
	noteTruncated(stderr, "stdout", res.Stdout.Truncated, len(res.Stdout.Tail), res.Stdout.TotalBytes, res.Stdout.SpillPath)
	noteTruncated(stderr, "stderr", res.Stderr.Truncated, len(res.Stderr.Tail), res.Stderr.TotalBytes, res.Stderr.SpillPath)
	switch {
	case res.TimedOut:
		fmt.Fprintf(stderr, "[subkit: timed out after %v; the run was terminated]\n", *timeout)
		return exitTimeout
	case res.Cancelled:
		fmt.Fprintln(stderr, "[subkit: interrupted; the run was terminated]")
		return exitCancelled
	case res.Signal != "":
		return exitSignalShift + signalNumber(res.Signal)
	}
	return res.ExitCode
}

// noTimeout is --timeout 0: no timeout at all.
const noTimeout = time.Duration(math.MaxInt64)

// timeoutMs is a timeout for the JSON: 0 for none.
func timeoutMs(d time.Duration) int64 {
	if d == noTimeout {
		return 0
	}
	return d.Milliseconds()
}

// codeRuntime is the code runtime of one command, on a Service of the command's own (confined
// by policy when it is not nil) that a second interrupt hurries; stop closes both.
func codeRuntime(ctx context.Context, policy *sandbox.Policy) (*coderuntime.Runtime, func(), error) {
	cfg := serviceConfig()
	cfg.Sandbox = policy
	svc, err := subprocess.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	rt, err := coderuntime.New(coderuntime.Config{Service: svc})
	if err != nil {
		svc.Close()
		return nil, nil, err
	}
	unhurry := hurried(ctx, svc.Hurry)
	return rt, func() {
		unhurry()
		rt.Close()
		svc.Close()
	}, nil
}

// cellsRun is what `subkit code --cells` was asked to do.
type cellsRun struct {
	lang              coderuntime.Language
	file              string
	keepGoing, asJSON bool
	timeout, grace    time.Duration
	tailBytes         int
	interpreter       string
	policy            *sandbox.Policy // --sandbox, or nil
}

type cellsOutput struct {
	Language   string       `json:"language"`
	Cancelled  bool         `json:"cancelled"`
	TimeoutMs  int64        `json:"timeout_ms"` // of each cell; 0: none
	Executions []cellResult `json:"executions"`
}

// runCells runs the cells of c.file in one session.
func runCells(ctx context.Context, c cellsRun, stdin io.Reader, stdout, stderr io.Writer) int {
	fail := func(kind string, code int, err error) int {
		return reportError(stdout, stderr, c.asJSON, "code", kind, code, err)
	}
	var src []byte
	var err error
	if c.file == "-" {
		src, err = io.ReadAll(stdin)
	} else {
		src, err = os.ReadFile(c.file)
	}
	if err != nil {
		return fail("invalid", exitUsage, fmt.Errorf("read the cells: %w", err))
	}
	list := splitCells(string(src))
	rt, stop, err := codeRuntime(ctx, c.policy)
	if err != nil {
		kind, code := startFailure(err)
		return fail(kind, code, err)
	}
	defer stop()
	s, err := rt.NewSession(ctx, coderuntime.SessionConfig{
		Language: c.lang, Interpreter: c.interpreter, Timeout: c.timeout, Grace: c.grace,
		StdoutBytes: c.tailBytes, StderrBytes: c.tailBytes,
	})
	if err != nil {
		switch {
		case errors.Is(err, coderuntime.ErrRuntimeUnavailable):
			return fail("not_found", exitNotFound, err)
		case errors.Is(err, coderuntime.ErrInvalid), errors.Is(err, coderuntime.ErrUnsupportedLanguage):
			return fail("invalid", exitUsage, err)
		case errors.Is(err, context.Canceled):
			return fail("cancelled", exitCancelled, err)
		}
		return fail("internal", exitFailure, err)
	}
	defer s.Close()
	out := cellsOutput{Language: string(c.lang), TimeoutMs: timeoutMs(c.timeout), Executions: []cellResult{}}
	status := 0
	for _, code := range list {
		ex, err := s.Run(ctx, coderuntime.Cell{Code: code}, coderuntime.Callbacks{})
		if err != nil {
			if errors.Is(err, context.Canceled) {
				status = exitCancelled
				break
			}
			return fail("internal", exitFailure, err)
		}
		out.Executions = append(out.Executions, cellResultOf("", ex, 0, true))
		if !c.asJSON {
			printExecution(stdout, stderr, ex)
		}
		switch {
		case ex.Cancelled:
			status = exitCancelled
		case ex.TimedOut:
			status = max(status, exitTimeout)
		case ex.Error != nil || ex.Restarted:
			status = max(status, exitFailure)
		}
		if ex.Cancelled || (ex.Error != nil || ex.TimedOut || ex.Restarted) && !c.keepGoing {
			break
		}
	}
	if c.asJSON {
		out.Cancelled = status == exitCancelled
		writeJSON(stdout, out)
		if out.Cancelled {
			return exitCancelled
		}
		return 0
	}
	if status == exitCancelled {
		fmt.Fprintln(stderr, "[subkit: interrupted; the cell was interrupted and the session ended]")
	}
	return status
}

// splitCells splits src at the lines that start a cell: "# %%" (jupytext's percent format) or
// "// %%". Markdown cells ("# %% [markdown]") and cells of only blanks are left out.
func splitCells(src string) []string {
	var cells []string
	var cur strings.Builder
	markdown := false
	flush := func() {
		if !markdown && strings.TrimSpace(cur.String()) != "" {
			cells = append(cells, cur.String())
		}
		cur.Reset()
	}
	for _, line := range strings.SplitAfter(src, "\n") {
		head := strings.TrimLeft(line, " \t")
		if rest, ok := strings.CutPrefix(head, "# %%"); ok || strings.HasPrefix(head, "// %%") {
			if !ok {
				rest = strings.TrimPrefix(head, "// %%")
			}
			flush()
			markdown = strings.Contains(rest, "[markdown]") || strings.Contains(rest, "[md]")
			continue
		}
		cur.WriteString(line)
	}
	flush()
	return cells
}

// printExecution prints a cell as text: its output, its results' text/plain (and the other
// MIME types by name; a result an earlier cell's code displayed names that cell), its error's
// traceback, the background errors and notes, and what happened to it.
func printExecution(stdout, stderr io.Writer, ex coderuntime.Execution) {
	io.WriteString(stdout, ex.Stdout.Tail)
	io.WriteString(stderr, ex.Stderr.Tail)
	noteTruncated(stderr, "stdout", ex.Stdout.Truncated, len(ex.Stdout.Tail), ex.Stdout.TotalBytes, "")
	noteTruncated(stderr, "stderr", ex.Stderr.Truncated, len(ex.Stderr.Tail), ex.Stderr.TotalBytes, "")
	for _, r := range ex.Results {
		text := r.MIME["text/plain"]
		if r.Main {
			text = fmt.Sprintf("Out[%d]: %s", ex.ExecutionCount, text)
		}
		var others []string
		for mime := range r.MIME {
			if mime != "text/plain" {
				others = append(others, mime)
			}
		}
		if len(others) > 0 && !strings.HasPrefix(text, "<display data:") {
			slices.Sort(others)
			text += " [also " + strings.Join(others, ", ") + "]"
		}
		if r.FromCell > 0 {
			text = fmt.Sprintf("[from cell %d] %s", r.FromCell, text)
		}
		fmt.Fprintln(stdout, text)
	}
	if ex.Error != nil {
		io.WriteString(stderr, tracebackText(ex.Error))
	}
	for _, e := range ex.BackgroundErrors {
		fmt.Fprintf(stderr, "[subkit: %s]\n%s", backgroundErrorHead(e.Cell), tracebackText(&e.CodeError))
	}
	if ex.BackgroundErrorsDropped > 0 {
		fmt.Fprintf(stderr, "[subkit: %d more background errors left out]\n", ex.BackgroundErrorsDropped)
	}
	for _, n := range ex.Notes {
		fmt.Fprintf(stderr, "[subkit: note: %s]\n", n)
	}
	switch {
	case ex.Restarted && ex.Interrupted:
		fmt.Fprintf(stderr, "[subkit: cell %d did not answer its interrupt; the interpreter was restarted%s and its state is gone]\n",
			ex.ExecutionCount, interpreterExitText(ex.InterpreterExit, " after it "))
	case ex.Restarted && ex.InterpreterExit != nil:
		fmt.Fprintf(stderr, "[subkit: the interpreter %s during cell %d and was restarted; its state is gone]\n",
			interpreterExitText(ex.InterpreterExit, ""), ex.ExecutionCount)
	case ex.Restarted:
		fmt.Fprintf(stderr, "[subkit: the interpreter had ended since the cell before; cell %d ran in a fresh one and the earlier state is gone]\n", ex.ExecutionCount)
	case ex.TimedOut:
		fmt.Fprintf(stderr, "[subkit: cell %d timed out and was interrupted]\n", ex.ExecutionCount)
	}
}

// tracebackText is e's traceback ending in a newline, or "Name: Value" when it has none.
func tracebackText(e *coderuntime.CodeError) string {
	tb := e.Traceback
	if tb == "" {
		tb = e.String()
	}
	return strings.TrimSuffix(tb, "\n") + "\n"
}

// backgroundErrorHead introduces a background error of the code cell left running (0: a cell
// that cannot be named).
func backgroundErrorHead(cell int) string {
	if cell > 0 {
		return fmt.Sprintf("background error: raised by code cell %d left running", cell)
	}
	return "background error: raised by code an earlier cell left running"
}

// interpreterExitText says how an interpreter ended ("killed by signal SIGSEGV", "exit status
// 3"), after prefix; "" when e is nil.
func interpreterExitText(e *coderuntime.ExitStatus, prefix string) string {
	switch {
	case e == nil:
		return ""
	case e.Signal != "":
		return prefix + "was killed by signal " + e.Signal
	}
	return fmt.Sprintf("%sexited with status %d", prefix, e.ExitCode)
}
