package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/subkit/subkit/bash"
	"github.com/subkit/subkit/internal/modelenv"
)

// bashUsage is subkit bash's help; the environment it names is modelenv's, the bash executor's.
var bashUsage = `usage: subkit bash [--config FILE] [--timeout DUR] [--stdout-max N] [--env NAME=VALUE]...
                   [--stdin-file F|-] [--json] 'COMMAND'

Runs COMMAND with the bash executor: a fresh non-login bash -c in a process group of its own,
with stdin from the null device (or --stdin-file), a credential-scrubbed environment that sets
  ` + strings.Join(modelenv.Pipes(), " ") + `
(no colour, pager, editor or password prompt; Python's output unbuffered), and each output
stream kept as a bounded tail plus a bounded spill file. On timeout or Ctrl-C the whole group
gets SIGTERM, then SIGKILL after the grace. Processes the command leaves running are ended when
subkit exits.

--config reads the executor's configuration (JSON if FILE ends in .json, YAML otherwise):
  cwd, timeoutMs (120000), maxTimeoutMs (600000), maxOutputBytes (64000),
  maxSpillBytes (67108864), graceMs (3000), drainMs (250), maxBackground, spillDir, spillMaxAgeMs,
  spillMaxTotalBytes, managedPrefix, allowEnv, sandbox (true, or a mapping of writable, hidden,
  noDefaultHidden, allowUnixSockets, protected, noDefaultProtected, network, backend, limits;
  the --sandbox flags win over it).
--timeout above maxTimeoutMs is lowered to it (and said so); --timeout 0 means no timeout of its
own (maxTimeoutMs applies). --managed-env sets the harness's variables (names with the managed
prefix). --stdout-max raises the in-memory stdout budget
above maxOutputBytes for this call (stderr keeps maxOutputBytes). --env may not set names with
the managed prefix (DSH_).

With --json it prints one JSON object and exits 0 once the command has run (130 when
interrupted):
  {"argv","pid","exit_code"(null when signalled),"signal","timed_out","timeout_ms"(applied),
   "cancelled","pipes_held","duration_ms","stdout":{"tail","total_bytes","truncated","spill_path"},
   "stderr":{...},"sandbox":{...}(with --sandbox),"command","lingering","survivors":[{"pid","comm"}]}
("lingering": the command left processes running, "survivors"; subkit ended them as it exited.)
Without it, it prints the text a model would see (the tails, truncation notices with the spill
file, the exit status, processes the command left running, which subkit ends as it exits).

flags:
`

// cmdBash is `subkit bash`.
func cmdBash(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bash", flag.ContinueOnError)
	var (
		config    = fs.String("config", "", "executor configuration file (JSON or YAML)")
		timeout   = fs.Duration("timeout", 0, "foreground timeout (default: the configuration's timeoutMs; 0: none of its own, maxTimeoutMs applies)")
		stdoutMax = fs.Int("stdout-max", 0, "in-memory stdout budget for this call, above maxOutputBytes")
		stdinFile = fs.String("stdin-file", "", "file whose bytes become stdin, or - for this process's stdin")
		asJSON    = fs.Bool("json", false, "print one JSON object")
		env       stringList
	)
	fs.Var(&env, "env", "NAME=VALUE set in the command's environment (repeatable)")
	var managed stringList
	fs.Var(&managed, "managed-env", "NAME=VALUE of the harness's own variables, names with the managed prefix (repeatable)")
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
	if *timeout < 0 {
		return fail("invalid", exitUsage, fmt.Errorf("--timeout %v is negative (0: none of its own)", *timeout))
	}
	req := bash.Request{Command: fs.Arg(0), StdoutMaxBytes: *stdoutMax}
	for _, f := range []struct {
		flag string
		kvs  []string
		to   *map[string]string
	}{{"--env", env, &req.Env}, {"--managed-env", managed, &req.ManagedEnv}} {
		for _, kv := range f.kvs {
			name, value, ok := strings.Cut(kv, "=")
			if !ok {
				return fail("invalid", exitUsage, fmt.Errorf("%s %q is not NAME=VALUE", f.flag, kv))
			}
			if *f.to == nil {
				*f.to = map[string]string{}
			}
			(*f.to)[name] = value
		}
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
	defer hurried(ctx, e.Hurry)()
	asked := *timeout
	if flagSet(fs, "timeout") && asked == 0 {
		asked = e.Config().MaxTimeout // no timeout of its own: the cap
	}
	req.Timeout = asked
	res, err := e.Exec(ctx, req)
	if cerr := e.Close(); cerr != nil {
		fmt.Fprintf(stderr, "subkit: %v\n", cerr)
	}
	if err != nil {
		kind, code := startFailure(err)
		return fail(kind, code, err)
	}
	lowered := asked > res.Timeout
	if *asJSON {
		out := bashResultOf(res)
		writeJSON(stdout, out)
		if res.Cancelled {
			return exitCancelled
		}
		return 0
	}
	if lowered {
		fmt.Fprintf(stderr, "[subkit: --timeout %v is above maxTimeoutMs; %v applied]\n", asked, res.Timeout)
	}
	// subkit has closed the executor: what the command left running was ended, not left to run.
	left := res.Survivors
	lingered := res.Lingering
	res.Lingering = false
	io.WriteString(stdout, bash.Render(res, nil))
	if lingered {
		names := make([]string, len(left))
		for i, p := range left {
			names[i] = fmt.Sprintf("pid %d (%s)", p.Pid, p.Comm)
		}
		fmt.Fprintf(stdout, "[the command left %d process(es) running in the background (%s); subkit ended them as it exited]\n",
			max(len(left), 1), strings.Join(names, ", "))
	}
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
