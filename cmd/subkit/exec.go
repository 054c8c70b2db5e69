package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/subkit/subkit/subprocess"
)

const execUsage = `usage: subkit exec [--dir D] [--env NAME=VALUE]... [--stdin-file F|-] [--timeout DUR]
                   [--grace DUR] [--tail-bytes N] [--spill-bytes N] [--json] -- PROGRAM [ARGS...]

Runs PROGRAM as a detached process tree with stdin from the null device (or --stdin-file),
both output streams collected as a bounded tail plus a bounded spill file, and a credential-
scrubbed environment. On timeout or Ctrl-C the whole tree gets SIGTERM, then SIGKILL after the
grace (a second Ctrl-C: at once). --timeout 0 means none. --sandbox confines it (Linux).

With --json it prints one JSON object and exits 0 once the program has run (130 when
interrupted):
  {"argv","pid","exit_code"(null when signalled),"signal","timed_out","timeout_ms","cancelled",
   "pipes_held","duration_ms","stdout":{"tail","total_bytes","truncated","spill_path"},
   "stderr":{...},"sandbox":{"backend","network","how","writable","hidden","allow","deny",
   "network_refused"(these three with --network allow),"unenforced"}(with --sandbox)}
Without it, it prints the tails (stdout to stdout, stderr to stderr), notes a truncation on
stderr, and exits with the program's status.

flags:
`

// stringList is a repeatable flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func cmdExec(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("exec", flag.ContinueOnError)
	var (
		dir        = fs.String("dir", "", "working directory (default: the current one)")
		env        stringList
		stdinFile  = fs.String("stdin-file", "", "file whose bytes become stdin, or - for this process's stdin")
		timeout    = fs.Duration("timeout", 0, "terminate the tree after this long (0: no timeout)")
		grace      = fs.Duration("grace", subprocess.DefaultGrace, "wait between SIGTERM and SIGKILL, and for pipes to drain")
		tailBytes  = fs.Int("tail-bytes", subprocess.DefaultTailBytes, "bytes of each stream kept in memory")
		spillBytes = fs.Int64("spill-bytes", 64<<20, "largest stream kept whole in a spill file (0: no spill file)")
		asJSON     = fs.Bool("json", false, "print one JSON object")
	)
	fs.Var(&env, "env", "NAME=VALUE set in the child's environment (repeatable)")
	var sb sandboxFlags
	sb.register(fs)
	fail := func(kind string, code int, err error) int {
		return reportError(stdout, stderr, *asJSON, "exec", kind, code, err)
	}
	if help, err := parseFlags(fs, args, execUsage, stdout); help {
		return 0
	} else if err != nil {
		return fail("invalid", exitUsage, err)
	}
	policy, err := sb.policy(fs)
	if err != nil {
		return fail("invalid", exitUsage, err)
	}
	switch {
	case fs.NArg() == 0:
		return fail("invalid", exitUsage, errors.New("no program given: subkit exec [flags] -- PROGRAM [ARGS...]"))
	case *tailBytes <= 0:
		return fail("invalid", exitUsage, fmt.Errorf("--tail-bytes %d must be positive", *tailBytes))
	case *spillBytes < 0:
		return fail("invalid", exitUsage, fmt.Errorf("--spill-bytes %d must be 0 (no spill) or positive", *spillBytes))
	case *timeout < 0 || *grace <= 0:
		return fail("invalid", exitUsage, errors.New("--timeout must not be negative (0: none) and --grace must be positive"))
	}
	if err := checkDir(*dir); err != nil {
		return fail("invalid", exitUsage, err)
	}
	spec := subprocess.Spec{
		Path: fs.Arg(0), Args: fs.Args()[1:], Dir: *dir, Env: env,
		Grace: *grace, Timeout: *timeout,
		Stdout:  subprocess.Output{TailBytes: *tailBytes, SpillBytes: *spillBytes},
		Stderr:  subprocess.Output{TailBytes: *tailBytes, SpillBytes: *spillBytes},
		Sandbox: policy,
	}
	if *stdinFile != "" {
		data, err := readStdinFile(*stdinFile, stdin)
		if err != nil {
			return fail("invalid", exitUsage, err)
		}
		spec.Stdin = subprocess.Input{Kind: subprocess.InputBytes, Data: data}
	}

	svc, err := subprocess.New(serviceConfig())
	if err != nil {
		kind, code := startFailure(err)
		return fail(kind, code, err)
	}
	defer svc.Close()
	defer hurried(ctx, svc.Hurry)()
	h, err := svc.Spawn(context.Background(), spec)
	if err != nil {
		kind, code := startFailure(err)
		return fail(kind, code, err)
	}
	defer h.Close()
	res, err := h.Wait(ctx)
	cancelled := err != nil
	if cancelled { // interrupted: end the tree, then report what it did
		h.Terminate(context.Background())
		res, err = h.Wait(context.Background())
		if err != nil {
			return fail("internal", exitFailure, err)
		}
		res.Cancelled = !res.TimedOut // interrupted, even if the tree settled by itself meanwhile; a timeout came first otherwise
	}
	if *asJSON {
		out := execResultOf(h.Argv(), res, *timeout)
		writeJSON(stdout, out)
		if cancelled {
			return exitCancelled
		}
		return 0
	}
	stdout.Write(res.Stdout.Tail)
	stderr.Write(res.Stderr.Tail)
	noteTruncated(stderr, "stdout", res.Stdout.Truncated, len(res.Stdout.Tail), res.Stdout.TotalBytes, res.Stdout.SpillPath)
	noteTruncated(stderr, "stderr", res.Stderr.Truncated, len(res.Stderr.Tail), res.Stderr.TotalBytes, res.Stderr.SpillPath)
	switch {
	case cancelled:
		fmt.Fprintln(stderr, "[subkit: interrupted; the tree was terminated]")
		return exitCancelled
	case res.TimedOut:
		fmt.Fprintf(stderr, "[subkit: timed out after %v; the tree was terminated]\n", *timeout)
		return exitTimeout
	case res.Signal != "":
		return exitSignalShift + signalNumber(res.Signal)
	}
	return res.ExitCode
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
}
