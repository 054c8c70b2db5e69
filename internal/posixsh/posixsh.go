package posixsh

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/interp"
	"mvdan.cc/sh/v3/syntax"
)

// Role is the value of the helper-role variable that makes the kit's helper executable run
// Main.
const Role = "sh"

// Name is how the shell names itself in its messages and in $0 by default.
const Name = "sh"

// killGrace is how long a program the script runs gets between the interrupt that a cancelled
// context sends it and a kill. The kit ends the whole tree itself, so this applies only to
// Main's own context.
const killGrace = 2 * time.Second

// Main runs the shell as bash takes its arguments: -c SCRIPT [NAME [ARG...]] runs SCRIPT with
// $0 NAME and the ARGs as $1...; SCRIPT-FILE [ARG...] runs a file; no argument reads the
// script from stdin. The environment and working directory are the process's. It returns the
// exit status: the script's (exit N, or its last command's), 2 for bad usage or a syntax
// error, 127 for a script file that cannot be read.
func Main(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	inv, status, err := parseArgs(args, stdin)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", Name, err)
		return status
	}
	file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(inv.src), inv.name)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", Name, err)
		return 2
	}
	dir, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(stderr, "%s: the working directory: %v\n", Name, err)
		return 1
	}
	r, err := interp.New(
		interp.StdIO(stdin, stdout, stderr),
		interp.Env(expand.ListEnviron(os.Environ()...)),
		interp.Dir(dir),
		interp.Params(append([]string{"--"}, inv.params...)...),
		interp.ExecHandlers(func(next interp.ExecHandlerFunc) interp.ExecHandlerFunc {
			return interp.DefaultExecHandler(killGrace)
		}),
	)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", Name, err)
		return 2
	}
	err = r.Run(ctx, file)
	if code, ok := interp.IsExitStatus(err); ok {
		return int(code)
	}
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			fmt.Fprintf(stderr, "%s: %v\n", Name, err)
		}
		return 1
	}
	return 0
}

// invocation is what the arguments ask to run: the script's name ($0), its parameters and its
// source.
type invocation struct {
	name   string
	params []string
	src    string
}

// parseArgs reads bash's argument forms; an error comes with the exit status it means.
func parseArgs(args []string, stdin io.Reader) (invocation, int, error) {
	switch {
	case len(args) > 0 && args[0] == "-c":
		if len(args) < 2 {
			return invocation{}, 2, errors.New("-c: option requires an argument")
		}
		inv := invocation{name: Name, src: args[1]}
		if len(args) > 2 {
			inv.name, inv.params = args[2], args[3:]
		}
		return inv, 0, nil
	case len(args) > 0 && strings.HasPrefix(args[0], "-") && args[0] != "-":
		return invocation{}, 2, fmt.Errorf("%s: invalid option (usage: %s [-c SCRIPT [NAME [ARG...]] | FILE [ARG...]])", args[0], Name)
	case len(args) > 0 && args[0] != "-":
		b, err := os.ReadFile(args[0])
		if err != nil {
			return invocation{}, 127, err
		}
		return invocation{name: args[0], params: args[1:], src: string(b)}, 0, nil
	default:
		b, err := io.ReadAll(stdin)
		if err != nil {
			return invocation{}, 2, fmt.Errorf("reading the script from stdin: %w", err)
		}
		return invocation{name: Name, src: string(b)}, 0, nil
	}
}
