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
func ExampleSubprocessRuntime_Run_timeout() {
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
