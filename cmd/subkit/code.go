package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/subkit/subkit/coderuntime"
	"github.com/subkit/subkit/subprocess"
)

const codeUsage = `usage: subkit code --lang python3|node|bash [--timeout DUR] [--grace DUR] [--tail-bytes N]
                   [--stdin-file F] [--interpreter PROGRAM] [--json] (CODE | -)

Runs CODE (or the code read from stdin, for -) in a fresh private directory with the language's
interpreter, stdin from the null device (or --stdin-file), a credential-scrubbed environment
and bounded output. On timeout or Ctrl-C the whole tree gets SIGTERM, then SIGKILL after the
grace; whatever the code leaves running is ended too.

With --json it prints one JSON object and exits 0 once the code has run:
  {"language","exit_code"(null when signalled),"signal","timed_out","cancelled","duration_ms",
   "stdout":{"tail","total_bytes","truncated","spill_path"},"stderr":{...},
   "error":{"name","value","traceback"} (only when the code raised or did not compile)}
Without it, it prints the tails (stdout to stdout, stderr to stderr, where the interpreter's
own traceback is), notes a truncation on stderr, and exits with the code's status: 128+N when
killed by signal N, 124 on timeout, 130 when interrupted.
If the code cannot run: exit 127 (interpreter not found or not executable), 2 (bad flags),
with {"error":{"kind":"unavailable"|"invalid","message"}} under --json.

flags:
`

// exitInterrupted is the status after Ctrl-C, as a shell reports SIGINT.
const exitInterrupted = 130

type codeOutput struct {
	Language   string                 `json:"language"`
	ExitCode   *int                   `json:"exit_code"`
	Signal     string                 `json:"signal"`
	TimedOut   bool                   `json:"timed_out"`
	Cancelled  bool                   `json:"cancelled"`
	DurationMs int64                  `json:"duration_ms"`
	Stdout     streamOutput           `json:"stdout"`
	Stderr     streamOutput           `json:"stderr"`
	Error      *coderuntime.CodeError `json:"error,omitempty"`
}

func cmdCode(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("code", flag.ContinueOnError)
	var (
		lang        = fs.String("lang", "", "language: python3, node or bash (required)")
		timeout     = fs.Duration("timeout", coderuntime.DefaultTimeout, "terminate the run after this long")
		grace       = fs.Duration("grace", subprocess.DefaultGrace, "wait between SIGTERM and SIGKILL, and for pipes to drain")
		tailBytes   = fs.Int("tail-bytes", coderuntime.DefaultOutputBytes, "bytes of each stream kept")
		stdinFile   = fs.String("stdin-file", "", "file whose bytes become the code's stdin, or - for this process's stdin")
		interpreter = fs.String("interpreter", "", "program that runs the code (default: the language's, from PATH)")
		asJSON      = fs.Bool("json", false, "print one JSON object")
	)
	fail := func(kind string, code int, err error) int {
		return reportError(stdout, stderr, *asJSON, "code", kind, code, err)
	}
	if help, err := parseFlags(fs, args, codeUsage, stdout); help {
		return 0
	} else if err != nil {
		return fail("invalid", exitUsage, err)
	}
	switch {
	case *lang == "":
		return fail("invalid", exitUsage, errors.New("--lang is required: python3, node or bash"))
	case fs.NArg() != 1:
		return fail("invalid", exitUsage, errors.New("give the code as one argument, or - to read it from stdin"))
	case *timeout <= 0 || *grace <= 0:
		return fail("invalid", exitUsage, errors.New("--timeout and --grace must be positive"))
	case *tailBytes <= 0:
		return fail("invalid", exitUsage, fmt.Errorf("--tail-bytes %d must be positive", *tailBytes))
	case fs.Arg(0) == "-" && *stdinFile == "-":
		return fail("invalid", exitUsage, errors.New("stdin cannot be both the code (-) and its input (--stdin-file -)"))
	}
	req := coderuntime.Request{
		Language: coderuntime.Language(*lang), Code: fs.Arg(0),
		Timeout: *timeout, Grace: *grace, Interpreter: *interpreter,
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

	rt, err := coderuntime.New(coderuntime.Config{ServiceConfig: serviceConfig()})
	if err != nil {
		return fail("internal", exitFailure, err)
	}
	defer rt.Close()
	res, err := rt.Run(ctx, req)
	if err != nil {
		switch {
		case errors.Is(err, coderuntime.ErrRuntimeUnavailable):
			return fail("unavailable", exitNotFound, err)
		case errors.Is(err, coderuntime.ErrInvalid), errors.Is(err, coderuntime.ErrUnsupportedLanguage):
			return fail("invalid", exitUsage, err)
		case errors.Is(err, context.Canceled):
			return fail("interrupted", exitInterrupted, err)
		}
		return fail("internal", exitFailure, err)
	}
	if *asJSON {
		out := codeOutput{
			Language: string(res.Language), Signal: res.Signal, TimedOut: res.TimedOut,
			Cancelled: res.Cancelled, DurationMs: res.Duration.Milliseconds(),
			Stdout: streamJSON(streamResult(res.Stdout)), Stderr: streamJSON(streamResult(res.Stderr)),
			Error: res.Error,
		}
		if res.Signal == "" {
			out.ExitCode = &res.ExitCode
		}
		writeJSON(stdout, out)
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
		return exitInterrupted
	case res.Signal != "":
		return exitSignalShift + signalNumber(res.Signal)
	}
	return res.ExitCode
}

// streamResult turns an Output back into the Service's shape for streamJSON (the tail is
// already cut at a character boundary, which streamJSON keeps).
func streamResult(o coderuntime.Output) subprocess.StreamResult {
	return subprocess.StreamResult{Tail: []byte(o.Tail), TotalBytes: o.TotalBytes, Truncated: o.Truncated, SpillPath: o.SpillPath}
}
