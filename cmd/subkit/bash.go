package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/subkit/subkit/bash"
)

// exitCancelled is subkit bash's status when it was interrupted (as a shell's after Ctrl-C).
const exitCancelled = 130

const bashUsage = `usage: subkit bash [--config FILE] [--timeout DUR] [--stdout-max N] [--env NAME=VALUE]...
                   [--stdin-file F|-] [--json] 'COMMAND'

Runs COMMAND with the bash executor: a fresh non-login bash -c in a process group of its own,
with stdin from the null device (or --stdin-file), a credential-scrubbed environment that sets
NO_COLOR=1 TERM=dumb PAGER=cat GIT_PAGER=cat GH_PAGER=cat GIT_TERMINAL_PROMPT=0 GIT_EDITOR=true,
and each output stream kept as a bounded tail plus a bounded spill file. On timeout or Ctrl-C
the whole group gets SIGTERM, then SIGKILL after the grace. Processes the command leaves running
are ended when subkit exits.

--config reads the executor's configuration (JSON if FILE ends in .json, YAML otherwise):
  cwd, timeoutMs (120000), maxTimeoutMs (600000), maxOutputBytes (64000),
  maxSpillBytes (67108864), graceMs (3000), drainMs (250), maxBackground, spillDir, spillMaxAgeMs,
  spillMaxTotalBytes, managedPrefix, allowEnv.
--timeout above maxTimeoutMs is lowered to it. --stdout-max raises the in-memory stdout budget
above maxOutputBytes for this call (stderr keeps maxOutputBytes). --env may not set names with
the managed prefix (DSH_).

With --json it prints one JSON object and exits 0 once the command has run:
  {"argv","pid","exit_code"(null when signalled),"signal","timed_out","duration_ms",
   "stdout":{"tail","total_bytes","truncated","spill_path"},"stderr":{...},
   "command","cancelled"}
Without it, it prints the text a model would see (the tails, truncation notices with the spill
file, the exit status, processes left running).

Exit status: the command's own status; 128+N when a signal N ended the shell; 124 on timeout;
130 when interrupted. If the command did not run: 2 for bad flags, configuration or request,
127 when bash is not found, 126 when it cannot be executed, 1 for any other failure, with
{"error":{"kind":"invalid"|"not_found"|"permission"|"internal","message"}} under --json.

flags:
`

type bashOutput struct {
	execOutput
	Command   string `json:"command"`
	Cancelled bool   `json:"cancelled"`
}

// cmdBash is `subkit bash`.
func cmdBash(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bash", flag.ContinueOnError)
	var (
		config    = fs.String("config", "", "executor configuration file (JSON or YAML)")
		timeout   = fs.Duration("timeout", 0, "foreground timeout (0: the configuration's timeoutMs)")
		stdoutMax = fs.Int("stdout-max", 0, "in-memory stdout budget for this call, above maxOutputBytes")
		stdinFile = fs.String("stdin-file", "", "file whose bytes become stdin, or - for this process's stdin")
		asJSON    = fs.Bool("json", false, "print one JSON object")
		env       stringList
	)
	fs.Var(&env, "env", "NAME=VALUE set in the command's environment (repeatable)")
	var sb sandboxFlags
	sb.register(fs)
	fail := func(kind string, code int, err error) int {
		return reportError(stdout, stderr, *asJSON, "bash", kind, code, err)
	}
	if help, err := parseFlags(fs, args, bashUsage, stdout); help {
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
		return fail("invalid", exitUsage, errors.New("no command given: subkit bash [flags] 'COMMAND'"))
	case fs.NArg() > 1:
		return fail("invalid", exitUsage, fmt.Errorf("%d arguments after the flags; quote the command as one argument: subkit bash 'COMMAND'", fs.NArg()))
	}
	req := bash.Request{Command: fs.Arg(0), Timeout: *timeout, StdoutMaxBytes: *stdoutMax}
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok {
			return fail("invalid", exitUsage, fmt.Errorf("--env %q is not NAME=VALUE", kv))
		}
		if req.Env == nil {
			req.Env = map[string]string{}
		}
		req.Env[name] = value
	}
	if *stdinFile != "" {
		var err error
		if req.Stdin, err = readStdinFile(*stdinFile, stdin); err != nil {
			return fail("invalid", exitUsage, err)
		}
		if req.Stdin == nil {
			req.Stdin = []byte{}
		}
	}
	var cfg bash.Config
	if *config != "" {
		var err error
		if cfg, err = bash.LoadConfig(*config); err != nil {
			return fail("invalid", exitUsage, err)
		}
	}

	cfg.Guard = guarded
	if policy != nil {
		cfg.Sandbox = policy // the flags win over the file's sandbox block
	}
	e, err := bash.New(cfg)
	if err != nil {
		switch {
		case errors.Is(err, bash.ErrInvalid):
			return fail("invalid", exitUsage, err)
		case isUnsupported(err):
			return fail("unsupported", exitFailure, err)
		}
		return fail("internal", exitFailure, err)
	}
	res, err := e.Exec(ctx, req)
	if cerr := e.Close(); cerr != nil {
		fmt.Fprintf(stderr, "subkit: %v\n", cerr)
	}
	if err != nil {
		kind, code := startFailure(err)
		return fail(kind, code, err)
	}
	if *asJSON {
		out := bashOutput{
			execOutput: execOutput{
				Argv: res.Argv, Pid: res.Pid, Signal: res.Signal, TimedOut: res.TimedOut,
				DurationMs: res.Duration.Milliseconds(),
				Stdout:     streamJSON(res.Stdout), Stderr: streamJSON(res.Stderr),
				Sandbox: sandboxJSON(res.Sandbox),
			},
			Command: res.Command, Cancelled: res.Cancelled,
		}
		if res.Signal == "" {
			out.ExitCode = &res.ExitCode
		}
		writeJSON(stdout, out)
		return 0
	}
	io.WriteString(stdout, bash.Render(res, nil))
	switch {
	case res.TimedOut:
		return exitTimeout
	case res.Cancelled:
		return exitCancelled
	case res.Signal != "":
		return exitSignalShift + signalNumber(res.Signal)
	}
	return res.ExitCode
}
