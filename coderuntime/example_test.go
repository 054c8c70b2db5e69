//go:build unix

package coderuntime_test

import (
	"context"
	"fmt"
	"time"

	"github.com/subkit/subkit/coderuntime"
)

// A run that raises: what it printed, and the exception as a structured error.
func Example() {
	rt, err := coderuntime.New(coderuntime.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()

	res, err := rt.Run(context.Background(), coderuntime.Request{
		Language: coderuntime.Python3,
		Code:     "print('computing')\nprint(1 / 0)\n",
		Timeout:  time.Minute,
	})
	if err != nil {
		panic(err) // the runtime failed (python3 missing, ...); the code's errors are in res
	}
	fmt.Printf("exit %d, stdout %q\n", res.ExitCode, res.Stdout.Tail)
	fmt.Printf("%s: %s\n", res.Error.Name, res.Error.Value)
	// Output:
	// exit 1, stdout "computing\n"
	// ZeroDivisionError: division by zero
}

// A timeout ends the whole tree, background jobs included.
func ExampleRuntime_Run_timeout() {
	rt, err := coderuntime.New(coderuntime.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()

	res, err := rt.Run(context.Background(), coderuntime.Request{
		Language: coderuntime.Bash,
		Code:     "sleep 1000 &\necho waiting\nwait\n",
		Timeout:  200 * time.Millisecond,
		Grace:    100 * time.Millisecond,
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("timed out %v, signal %s, stdout %q\n", res.TimedOut, res.Signal, res.Stdout.Tail)
	// Output: timed out true, signal SIGTERM, stdout "waiting\n"
}

// A session keeps its state from one cell to the next; a trailing expression is the main
// result, and display() gives more results.
func ExampleRuntime_NewSession() {
	rt, err := coderuntime.New(coderuntime.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	ctx := context.Background()
	s, err := rt.NewSession(ctx, coderuntime.SessionConfig{Language: coderuntime.Python3})
	if err != nil {
		panic(err) // python3 missing, ...
	}
	defer s.Close()

	for _, code := range []string{
		"x = 41\nprint('x is set')",
		"display({'text/html': '<b>hi</b>'}, raw=True)\nx + 1",
		"x / 0",
	} {
		ex, err := s.Run(ctx, coderuntime.Cell{Code: code, Timeout: time.Minute}, coderuntime.Callbacks{})
		if err != nil {
			panic(err)
		}
		fmt.Printf("[%d] stdout %q", ex.ExecutionCount, ex.Stdout.Tail)
		for _, r := range ex.Results {
			fmt.Printf(", result %q (main %v)", r.MIME["text/plain"], r.Main)
		}
		if ex.Error != nil {
			fmt.Printf(", error %s", ex.Error)
		}
		fmt.Println()
	}
	// Output:
	// [1] stdout "x is set\n"
	// [2] stdout "", result "<display data: text/html>" (main false), result "42" (main true)
	// [3] stdout "", error ZeroDivisionError: division by zero
}

// A cell that runs past its timeout is interrupted; the session's state survives.
func ExampleSession_interrupt() {
	rt, err := coderuntime.New(coderuntime.Config{})
	if err != nil {
		panic(err)
	}
	defer rt.Close()
	ctx := context.Background()
	s, err := rt.NewSession(ctx, coderuntime.SessionConfig{Language: coderuntime.Node, Grace: time.Minute})
	if err != nil {
		panic(err)
	}
	defer s.Close()

	run := func(code string, timeout time.Duration) coderuntime.Execution {
		ex, err := s.Run(ctx, coderuntime.Cell{Code: code, Timeout: timeout}, coderuntime.Callbacks{})
		if err != nil {
			panic(err)
		}
		return ex
	}
	run("let total = 0; for (let i = 1; i <= 10; i++) total += i;", time.Minute)
	ex := run("for (;;) {}", 500*time.Millisecond)
	fmt.Printf("timed out %v, interrupted %v, restarted %v, error %q\n", ex.TimedOut, ex.Interrupted, ex.Restarted, ex.Error.Value)
	fmt.Println(run("total", time.Minute).Results[0].MIME["text/plain"])
	// Output:
	// timed out true, interrupted true, restarted false, error "Script execution was interrupted by `SIGINT`"
	// 55
}
