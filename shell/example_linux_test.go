package shell_test

import (
	"context"
	"fmt"
	"time"

	"github.com/subkit/subkit/shell"
)

// A prompt comes back as soon as it shows, not at the yield: the Step says
// waiting_for_input, with the prompt's text and whether echo is off (a password prompt).
func ExampleSession_Write() {
	ctx := context.Background()
	s, err := shell.Open(ctx, shell.Config{})
	if err != nil {
		panic(err)
	}
	defer s.Close()

	st, _ := s.Run(ctx, `read -rs -p "Password: " pw; echo; echo "${#pw} characters"`, time.Minute)
	fmt.Printf("%s %q, %s\n", st.State, st.Input.Prompt, st.Input.Describe())
	st, _ = s.Write(ctx, "hunter2\n", time.Minute)
	fmt.Printf("%s %q\n", st.State, st.Output)
	// Output:
	// waiting_for_input "Password: ", waiting for input (echo off)
	// completed "\n7 characters\n"
}
