//go:build unix

package bash_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/subkit/subkit/bash"
)

// Run one command and show the model what happened.
func Example() {
	e, err := bash.New(bash.Config{})
	if err != nil {
		panic(err)
	}
	defer e.Close()

	res, err := e.Exec(context.Background(), bash.Request{Command: "echo hello; echo oops >&2; exit 3"})
	fmt.Print(bash.Render(res, err))
	// Output:
	// hello
	// [stderr]
	// oops
	// [exit code 3]
}

// A command that starts a daemon returns once the output pipes have drained for the grace; the
// daemon is reported and stays owned by the executor until Close.
func ExampleExecutor_Exec_daemon() {
	e, _ := bash.New(bash.Config{Grace: 200 * time.Millisecond})
	defer e.Close()

	res, _ := e.Exec(context.Background(), bash.Request{Command: "sleep 1000 & echo started"})
	fmt.Printf("%q exit %d, pipes held %v, %d survivor: %s\n",
		res.Stdout.Tail, res.ExitCode, res.PipesHeld, len(res.Survivors), res.Survivors[0].Comm)
	// Output: "started\n" exit 0, pipes held true, 1 survivor: sleep
}

// A foreground timeout terminates the whole process group.
func ExampleExecutor_Exec_timeout() {
	e, _ := bash.New(bash.Config{Grace: 100 * time.Millisecond})
	defer e.Close()

	res, _ := e.Exec(context.Background(), bash.Request{Command: "echo working; sleep 1000", Timeout: 200 * time.Millisecond})
	fmt.Print(bash.Render(res, nil))
	// Output:
	// working
	// [timed out after 200ms: the command and every process it started were terminated (the shell ended by SIGTERM)]
}

// Follow a background process with your own cursor; re-read from any offset at any time.
func ExampleProcess_ReadOutput() {
	e, _ := bash.New(bash.Config{})
	defer e.Close()

	p, err := e.Start(context.Background(), bash.Request{Command: "for i in 1 2 3; do echo line $i; sleep 0.05; done"})
	if err != nil {
		panic(err)
	}
	defer p.Close()

	var next bash.Offsets
	var got string
	for {
		d, err := p.WaitOutput(context.Background(), next, 0) // new output, or the end
		if err != nil {
			panic(err)
		}
		got += string(d.Stdout.Data)
		next = d.Next
		if d.Done() {
			fmt.Printf("exit %d\n", d.Result.ExitCode)
			break
		}
	}
	fmt.Print(got)
	again, _ := p.ReadOutput(bash.Offsets{Stdout: 7}, 7)
	fmt.Printf("from 7: %q, next %d\n", again.Stdout.Data, again.Next.Stdout)
	// Output:
	// exit 0
	// line 1
	// line 2
	// line 3
	// from 7: "line 2\n", next 14
}

// The request's plain env may not carry the harness's managed names.
func ExampleRequestError() {
	e, _ := bash.New(bash.Config{})
	defer e.Close()

	_, err := e.Exec(context.Background(), bash.Request{Command: "env", Env: map[string]string{"DSH_SESSION": "x"}})
	var re *bash.RequestError
	fmt.Println(errors.Is(err, bash.ErrInvalid), errors.As(err, &re) && re.Key == "DSH_SESSION")
	fmt.Print(bash.Render(bash.Result{}, err))
	// Output:
	// true true
	// [request refused, the command did not run: bash: request Env["DSH_SESSION"]: names with the managed prefix DSH_ belong in ManagedEnv]
}

// Configuration files use the reference executor's keys; mistakes name the key.
func ExampleParseConfigYAML() {
	c, err := bash.ParseConfigYAML([]byte("timeoutMs: 30000\nmaxOutputBytes: 20000\n"))
	fmt.Println(c.Timeout, c.MaxOutputBytes, err)

	_, err = bash.ParseConfigYAML([]byte("timeoutMs: 30000\nmaxTimeoutMS: 60000\n"))
	fmt.Println(err)
	// Output:
	// 30s 20000 <nil>
	// bash: config key maxTimeoutMS at line 2: unknown key; did you mean maxTimeoutMs? (keys are case-sensitive)
}
