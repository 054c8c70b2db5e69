//go:build unix

package shell_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/subkit/subkit/shell"
)

// State stays between commands, and every Step says how its command ended.
func Example() {
	ctx := context.Background()
	s, err := shell.Open(ctx, shell.Config{})
	if err != nil {
		panic(err)
	}
	defer s.Close()

	for _, cmd := range []string{"cd /usr", "export GREETING=hello", "echo $GREETING from $PWD", "false"} {
		st, err := s.Run(ctx, cmd, 10*time.Second)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s -> %s, exit %d, cwd %s, output %q\n", cmd, st.State, st.ExitCode, st.Cwd, st.Output)
	}
	// Output:
	// cd /usr -> completed, exit 0, cwd /usr, output ""
	// export GREETING=hello -> completed, exit 0, cwd /usr, output ""
	// echo $GREETING from $PWD -> completed, exit 0, cwd /usr, output "hello from /usr\n"
	// false -> completed, exit 1, cwd /usr, output ""
}

// A command still running at the yield is reported running, with the foreground command;
// Interrupt sends Ctrl-C and says whether the prompt came back.
func ExampleSession_Interrupt() {
	ctx := context.Background()
	s, _ := shell.Open(ctx, shell.Config{})
	defer s.Close()

	st, _ := s.Run(ctx, "sleep 100", 300*time.Millisecond)
	fmt.Println(st.State)
	st, _ = s.Interrupt(ctx, 10*time.Second)
	fmt.Println(st.State, st.ExitCode)
	// Output:
	// running
	// completed 130
}

// A syntax error is refused before anything runs.
func ExampleSyntaxError() {
	ctx := context.Background()
	s, _ := shell.Open(ctx, shell.Config{})
	defer s.Close()

	_, err := s.Run(ctx, "echo )", 0)
	var se *shell.SyntaxError
	fmt.Println(errors.Is(err, shell.ErrSyntax), errors.As(err, &se))
	fmt.Println(se.Message)
	// Output:
	// true true
	// bash: line 1: syntax error near unexpected token `)'
	// bash: line 1: `echo )'
}

// A Manager hands out sessions by id on one Service; Close ends them all.
func ExampleManager() {
	ctx := context.Background()
	m, err := shell.NewManager(shell.ManagerConfig{})
	if err != nil {
		panic(err)
	}
	defer m.Close()

	a, _ := m.Open(ctx)
	b, _ := m.Open(ctx)
	a.Run(ctx, "cd /", 0)
	b.Run(ctx, "exit 2", 0)
	for _, in := range m.List() {
		fmt.Println(in.ID, in.State, in.ExitCode)
	}
	// Output:
	// 1 completed 0
	// 2 exited 2
}
