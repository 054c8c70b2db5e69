package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/subkit/subkit/internal/done"
	"github.com/subkit/subkit/subprocess"
)

const termUsage = `usage: subkit term [--cols N] [--rows N] -- PROGRAM [ARGS...]
       subkit term --script FILE [--timeout DUR] [--json] -- PROGRAM [ARGS...]

Runs PROGRAM on a terminal (pty) of its own, as a session leader.

Without --script it is an interactive pass-through: this terminal goes to raw mode, keys go to
the program, its screen comes back, and a resize here resizes it. It exits with the program's
status.

With --script it types FILE's lines one by one (each after the output has been quiet for a
moment), waits for the program to finish or --timeout (default 10s, 0: none; then it
terminates the program and everything it started), and prints
  {"transcript":"...","exit_code":N|null,"signal":"","timed_out","timeout_ms","cancelled",
   "foreground_seen":[{"pid","pgid","comm"}]}
with --json (the transcript alone without, then the program's status).

flags:
`

type fgEntry struct {
	Pid  int    `json:"pid"`
	Pgid int    `json:"pgid"`
	Comm string `json:"comm"`
}

type termOutput struct {
	Transcript     string    `json:"transcript"`
	ExitCode       *int      `json:"exit_code"`
	Signal         string    `json:"signal"`
	TimedOut       bool      `json:"timed_out"`
	TimeoutMs      int64     `json:"timeout_ms"` // 0: none
	Cancelled      bool      `json:"cancelled"`
	ForegroundSeen []fgEntry `json:"foreground_seen"`
}

func cmdTerm(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("term", flag.ContinueOnError)
	var (
		cols    = fs.Int("cols", 0, "terminal width (default: this terminal's, else 80)")
		rows    = fs.Int("rows", 0, "terminal height (default: this terminal's, else 24)")
		script  = fs.String("script", "", "file whose lines are typed into the terminal")
		timeout = fs.Duration("timeout", 10*time.Second, "with --script: how long the program may run")
		asJSON  = fs.Bool("json", false, "with --script: print one JSON object")
	)
	fail := func(kind string, code int, err error) int {
		return reportError(stdout, stderr, *asJSON, "term", kind, code, err)
	}
	if help, err := parseFlags(fs, args, termUsage, stdout); help {
		return 0
	} else if err != nil {
		return fail("invalid", exitUsage, err)
	}
	switch {
	case fs.NArg() == 0:
		return fail("invalid", exitUsage, errors.New("no program given: subkit term [flags] -- PROGRAM [ARGS...]"))
	case *cols < 0 || *rows < 0:
		return fail("invalid", exitUsage, errors.New("--cols and --rows must not be negative"))
	case *timeout < 0:
		return fail("invalid", exitUsage, errors.New("--timeout must not be negative (0: none)"))
	case *script == "" && *asJSON:
		return fail("invalid", exitUsage, errors.New("--json needs --script"))
	}
	var lines []string
	if *script != "" {
		f, err := os.Open(*script)
		if err != nil {
			return fail("invalid", exitUsage, fmt.Errorf("--script: %w", err))
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return fail("invalid", exitUsage, fmt.Errorf("--script: %w", err))
		}
	}

	svc, err := subprocess.New(serviceConfig())
	if err != nil {
		kind, code := startFailure(err)
		return fail(kind, code, err)
	}
	defer svc.Close()
	defer hurried(ctx, svc.Hurry)()
	spec := subprocess.Spec{Path: fs.Arg(0), Args: fs.Args()[1:], TTY: &subprocess.TTY{Cols: *cols, Rows: *rows}}
	if *script == "" {
		return interactive(ctx, svc, spec, stdin, stdout, stderr)
	}
	term, err := svc.Spawn(ctx, spec)
	if err != nil {
		kind, code := startFailure(err)
		return fail(kind, code, err)
	}
	defer term.Close()
	out := runScript(ctx, term, lines, *timeout)
	if *asJSON {
		writeJSON(stdout, out)
	} else {
		io.WriteString(stdout, out.Transcript)
	}
	switch {
	case out.Cancelled:
		return exitCancelled
	case *asJSON:
		return 0
	case out.TimedOut:
		return exitTimeout
	case out.Signal != "":
		return exitSignalShift + signalNumber(out.Signal)
	case out.ExitCode != nil:
		return *out.ExitCode
	}
	return 0
}

// quiet is how long the output must rest before the next scripted line is typed.
const quiet = 150 * time.Millisecond

func runScript(parent context.Context, term *subprocess.Handle, lines []string, timeout time.Duration) termOutput {
	ctx, cancel := parent, context.CancelFunc(func() {})
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(parent, timeout)
	}
	defer cancel()
	seen := map[fgEntry]bool{}
	out := termOutput{ForegroundSeen: []fgEntry{}}
	sample := func() {
		fg, err := term.Foreground(ctx)
		if err != nil {
			return
		}
		for _, p := range fg.Procs {
			e := fgEntry{p.Pid, p.Pgid, p.Comm}
			if !seen[e] {
				seen[e] = true
				out.ForegroundSeen = append(out.ForegroundSeen, e)
			}
		}
	}
	// waitQuiet samples the foreground until the output has rested for `quiet` while the
	// program itself holds the foreground (a shell waiting for its next line).
	waitQuiet := func() {
		for {
			updated := term.Updated(subprocess.Stdout)
			sample()
			select {
			case <-updated:
				continue
			case <-time.After(quiet):
				if fg, err := term.Foreground(ctx); err == nil && fg.Pgid != term.Pid() {
					continue // a job runs in the foreground: its input is not ours to type
				}
				return
			case <-term.Done():
				return
			case <-ctx.Done():
				return
			}
		}
	}
	waitQuiet()
	for _, line := range lines {
		if ctx.Err() != nil || done.Closed(term.Done()) {
			break
		}
		term.Write([]byte(line + "\r"))
		waitQuiet()
	}
	for ctx.Err() == nil && !done.Closed(term.Done()) {
		sample()
		select {
		case <-term.Done():
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	out.Cancelled = parent.Err() != nil
	out.TimedOut = !out.Cancelled && ctx.Err() != nil && !done.Closed(term.Done())
	out.TimeoutMs = timeout.Milliseconds()
	term.Terminate(context.Background())
	res, _ := term.Wait(context.Background())
	if d, err := term.ReadOutput(subprocess.Stdout, 0, 0); err == nil {
		out.Transcript = string(d.Data)
	}
	if res.Signal == "" {
		out.ExitCode = &res.ExitCode
	}
	out.Signal = res.Signal
	return out
}
