package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/subkit/subkit/shell"
	"github.com/subkit/subkit/subprocess"
)

const shellUsage = `usage: subkit shell --script FILE [--yield DUR] [--json] [--sandbox [--writable DIR]...
                    [--hidden PATH]... [--no-default-hidden] [--allow-unix-socket PATH]... [--network on|off]]

Runs FILE's lines as the commands of one shell session: an interactive bash on a terminal of its
own, whose state (cwd, variables, functions, an activated virtualenv) stays from one line to the
next, in the model-friendly environment of subkit bash. Each line runs to completion, until the
program in the foreground waits for input (Linux: it is blocked reading the terminal and its
output has been quiet for 100ms), or until --yield (default 10s) has passed while it still runs;
a line starting with "> " is typed, without the "> ", into the program in the foreground (a
REPL, a prompt) instead of run as a command.
Empty lines are skipped. When FILE is done the session is closed, with everything it started.
--sandbox confines the shell and everything it starts (Linux), as for subkit bash.

With --json it prints one JSON object:
  {"steps":[{"state","command","output","omitted","omitted_from","from","next","exit_code","signal",
   "cwd","duration_ms","foreground","foreground_pid","input","screen","notes","cancelled"}],
   "exit_code","cancelled","sandbox":{...}(as subkit exec's, with --sandbox)}
state is "completed" (exit_code is the command's status), "waiting_for_input" (the foreground
program waits for input: input is {"pid","comm","modes_known","line_mode","echo_off","prompt"},
echo_off at a password prompt; exit_code null), "running" (still running at the yield;
foreground names the foreground program; exit_code null), "exited" (the shell ended;
exit_code is its status, null when a signal ended it), "syntax_error" (refused by bash -n,
nothing ran) or "refused" (not run: an earlier line still runs, or the shell has exited);
output is the step's new output (its head and tail beyond 64000 bytes); screen is the screen of
a full-screen program (vim, less, top, watch: TERM is xterm-256color) as a person would see it,
200x50, trailing blanks trimmed, whose bytes are not in output; from, next and omitted_from are
offsets in the session's transcript; the last "exit_code" is the last step's. It exits 0 once
the session has run (130 when interrupted). Without --json it prints each step as
"$ command", its output and a bracketed status line ("> " lines as they are), and exits with the
last step's exit code (0 when it has none).

flags:
`

// shellInput is a step's shell.InputWait: who waits for input and how the terminal takes it.
type shellInput struct {
	Pid        int    `json:"pid" jsonschema:"the process blocked reading the terminal"`
	Comm       string `json:"comm" jsonschema:"its command name"`
	ModesKnown bool   `json:"modes_known" jsonschema:"line_mode and echo_off were read from the terminal"`
	LineMode   bool   `json:"line_mode" jsonschema:"the terminal takes a line at a time: end what you type with \\n; false: every key is read as typed"`
	EchoOff    bool   `json:"echo_off" jsonschema:"echo is off, as at a password prompt: what is typed is not shown"`
	Prompt     string `json:"prompt" jsonschema:"the last line of output, usually the prompt's text"`
}

func shellInputOf(w *shell.InputWait) *shellInput {
	if w == nil {
		return nil
	}
	return &shellInput{Pid: w.Pid, Comm: w.Comm, ModesKnown: w.ModesKnown, LineMode: w.LineMode, EchoOff: w.EchoOff, Prompt: w.Prompt}
}

// screenText frames a full-screen program's screen, or is "".
func screenText(screen string) string {
	if screen == "" {
		return ""
	}
	return "[screen of the full-screen program:]\n" + screen + "\n[end of screen]\n"
}

// waitingLine is the status line of a step that waits for input.
func waitingLine(in *shellInput, how string) string {
	if in == nil {
		return "[waiting for input]\n"
	}
	desc := (&shell.InputWait{EchoOff: in.EchoOff}).Describe()
	mode := ""
	switch {
	case in.ModesKnown && in.LineMode:
		mode = " in line mode (end the input with a newline)"
	case in.ModesKnown:
		mode = " key by key"
	}
	return fmt.Sprintf("[%s: %s (pid %d) reads the terminal%s%s]\n", desc, in.Comm, in.Pid, mode, how)
}

type shellOutput struct {
	Steps     []shellStepOut `json:"steps"`
	ExitCode  *int           `json:"exit_code"`
	Cancelled bool           `json:"cancelled"` // interrupted: the session was closed
	// Sandbox is how the shell was confined (--sandbox), absent otherwise.
	Sandbox *sandboxOutput `json:"sandbox,omitempty"`
}

// cmdShell is `subkit shell`.
func cmdShell(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("shell", flag.ContinueOnError)
	var (
		script = fs.String("script", "", "file whose lines are run as the session's commands")
		yield  = fs.Duration("yield", 10*time.Second, "how long each line may run before the next one")
		asJSON = fs.Bool("json", false, "print one JSON object")
	)
	var sb sandboxFlags
	sb.register(fs)
	fail := func(kind string, code int, err error) int {
		return reportError(stdout, stderr, *asJSON, "shell", kind, code, err)
	}
	if help, err := parseFlags(fs, args, shellUsage, stdout); help {
		return 0
	} else if err != nil {
		return fail("invalid", exitUsage, err)
	}
	policy, err := sb.policy(fs)
	if err != nil {
		return fail("invalid", exitUsage, err)
	}
	switch {
	case *script == "":
		return fail("invalid", exitUsage, errors.New("--script FILE is required"))
	case fs.NArg() > 0:
		return fail("invalid", exitUsage, fmt.Errorf("unexpected arguments %q: the commands come from --script", fs.Args()))
	case *yield <= 0 || *yield > shell.DefaultMaxYield:
		return fail("invalid", exitUsage, fmt.Errorf("--yield must be above 0 and at most %v", shell.DefaultMaxYield))
	}
	lines, err := readLines(*script)
	if err != nil {
		return fail("invalid", exitUsage, fmt.Errorf("--script: %w", err))
	}

	cfg := serviceConfig()
	cfg.Sandbox = policy
	svc, err := subprocess.New(cfg)
	if err != nil {
		kind, code := startFailure(err)
		return fail(kind, code, err)
	}
	defer svc.Close()
	defer hurried(ctx, svc.Hurry)()
	s, err := shell.Open(ctx, shell.Config{Service: svc})
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return fail("cancelled", exitCancelled, err)
		}
		kind, code := startFailure(err)
		return fail(kind, code, err)
	}
	out, interrupted := runShellScript(ctx, s, lines, *yield)
	out.Sandbox = sandboxJSON(s.Sandbox())
	if err := s.Close(); err != nil {
		fmt.Fprintf(stderr, "subkit: %v\n", err)
	}
	out.Cancelled = interrupted
	if *asJSON {
		writeJSON(stdout, out)
	} else {
		for _, st := range out.Steps {
			io.WriteString(stdout, renderShellStep(st))
		}
	}
	switch {
	case interrupted:
		return exitCancelled
	case *asJSON || out.ExitCode == nil:
		return 0
	}
	return *out.ExitCode
}

func readLines(name string) ([]string, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), shell.MaxCommandBytes)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	return lines, sc.Err()
}

// runShellScript runs the lines; it reports whether ctx ended it.
func runShellScript(ctx context.Context, s *shell.Session, lines []string, yield time.Duration) (shellOutput, bool) {
	out := shellOutput{Steps: []shellStepOut{}}
	for _, line := range lines {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var st shell.Step
		var err error
		if input, ok := strings.CutPrefix(line, "> "); ok {
			st, err = s.Write(ctx, input+"\n", yield)
		} else {
			st, err = s.Run(ctx, line, yield)
		}
		if ctx.Err() != nil {
			return out, true
		}
		step := shellStepOut{Notes: []string{}}
		var se *shell.SyntaxError
		switch {
		case errors.As(err, &se):
			step.State, step.Output = "syntax_error", se.Message
			code := 2 // bash's status for a syntax error
			step.ExitCode = &code
		case err != nil:
			step.State, step.Output = "refused", err.Error()
		default:
			step = shellStepOf("", st)
		}
		step.Command = line
		out.Steps = append(out.Steps, step)
		out.ExitCode = step.ExitCode
	}
	return out, false
}

// renderShellStep is one step as text: the command, its output, a bracketed status line.
func renderShellStep(st shellStepOut) string {
	var b strings.Builder
	if strings.HasPrefix(st.Command, "> ") {
		b.WriteString(st.Command + "\n") // input typed into the foreground program
	} else {
		b.WriteString("$ " + st.Command + "\n")
	}
	b.WriteString(st.Output)
	if st.Output != "" && !strings.HasSuffix(st.Output, "\n") {
		b.WriteString("\n")
	}
	b.WriteString(screenText(st.Screen))
	for _, n := range st.Notes {
		b.WriteString("[note: " + n + "]\n")
	}
	switch st.State {
	case "completed":
		if *st.ExitCode != 0 {
			fmt.Fprintf(&b, "[exit code %d]\n", *st.ExitCode)
		}
	case "running":
		fmt.Fprintf(&b, "[still running: %s in the foreground]\n", st.Foreground)
	case "waiting_for_input":
		b.WriteString(waitingLine(st.Input, "; a \"> \" line types into it"))
	case "exited":
		if st.ExitCode != nil {
			fmt.Fprintf(&b, "[the shell exited with status %d]\n", *st.ExitCode)
		} else {
			b.WriteString("[the shell was ended by a signal]\n")
		}
	case "syntax_error":
		b.WriteString("[syntax error: nothing ran]\n")
	case "refused":
		b.WriteString("[not run]\n")
	}
	return b.String()
}
