package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/subkit/subkit/internal/exitstatus"
	"github.com/subkit/subkit/subprocess"
)

//go:generate go run ../../internal/exitstatus/mkreadme -doc ../../README.md

// Exit statuses of subkit itself: the one table of every command (internal/exitstatus).
const (
	exitFailure     = exitstatus.Failure
	exitUsage       = exitstatus.Usage
	exitTimeout     = exitstatus.Timeout
	exitNotExec     = exitstatus.NotExec
	exitNotFound    = exitstatus.NotFound
	exitSignalShift = exitstatus.SignalShift
	exitCancelled   = exitstatus.Cancelled
)

// exitStatusText is the exit-status table as every command's -h prints it; the README's
// table is made from the same rows by go generate.
var exitStatusText = exitstatus.Text()

var usage = `usage: subkit COMMAND [flags] [args]

commands:
  exec   run one process tree with bounded output and print its result
  tree   show a process and its descendants
  term   run a program on a terminal of its own (interactive, or scripted with --script)
  bash   run one bash command with the bash executor (bounded output, no pager or prompt)
  shell  run a script's lines as the commands of one stateful shell session
  lsp    launch a language server, open files, ask for a hover, shut it down
  code   run a snippet of python3, node or bash code and report its result
  mcp    serve the kit's tools (bash, shells, code, lsp diagnostics, process trees) over MCP

Run "subkit COMMAND -h" for a command's flags; "subkit --version" for the version.

` + exitStatusText

func main() {
	subprocess.HelperMain() // subkit is the kit's helper executable too (the guard)
	os.Exit(runMain(os.Args[1:]))
}

// runMain is main with the signals that end a command: Ctrl-C, SIGTERM, and SIGHUP (the
// terminal closed), each treated alike. The first cancels the command's context (its trees
// are terminated with the grace); the second cuts the grace short (see hurried).
func runMain(args []string) int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	second := make(chan struct{})
	go func() {
		<-sigs
		cancel()
		<-sigs
		close(second)
	}()
	return run(context.WithValue(ctx, secondInterrupt{}, (<-chan struct{})(second)), args, os.Stdin, os.Stdout, os.Stderr)
}

// secondInterrupt is the context key of the channel closed on a second interrupt.
type secondInterrupt struct{}

// hurried calls hurry (a Service's or an adapter's Hurry) on a second interrupt, until the
// returned stop is called.
func hurried(ctx context.Context, hurry func()) (stop func()) {
	second, _ := ctx.Value(secondInterrupt{}).(<-chan struct{})
	if second == nil {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		select {
		case <-second:
			hurry()
		case <-done:
		}
	}()
	return func() { close(done) }
}

// guarded says whether the CLI runs its Services with a guard (Linux: nothing a command
// started outlives it, even when it is killed with SIGKILL).
const guarded = runtime.GOOS == "linux"

// serviceConfig is the Service configuration of every command.
func serviceConfig() subprocess.Config { return subprocess.Config{Guard: guarded} }

// run is the whole CLI, minus process exit, so tests drive it in-process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "exec":
		return cmdExec(ctx, args[1:], stdin, stdout, stderr)
	case "tree":
		return cmdTree(ctx, args[1:], stdout, stderr)
	case "term":
		return cmdTerm(ctx, args[1:], stdin, stdout, stderr)
	case "bash":
		return cmdBash(ctx, args[1:], stdin, stdout, stderr)
	case "shell":
		return cmdShell(ctx, args[1:], stdout, stderr)
	case "lsp":
		return cmdLsp(ctx, args[1:], stdout, stderr)
	case "code":
		return cmdCode(ctx, args[1:], stdin, stdout, stderr)
	case "mcp":
		return cmdMcp(ctx, args[1:], stdin, stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	case "--version", "version":
		return cmdVersion(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "subkit: unknown command %q\n\n%s", args[0], usage)
	return exitUsage
}
