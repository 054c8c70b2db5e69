package shell

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/subkit/subkit/subprocess"
)

// syntaxTimeout bounds one `bash -n`.
const syntaxTimeout = 10 * time.Second

// plainCommand reports whether command is only words of letters, digits and the characters
// _ . / : = , + @ % ^ - ~, none of them a reserved word: such a command cannot have a syntax
// error (no quote, bracket, operator or redirection to unbalance), so `bash -n` is skipped.
func plainCommand(command string) bool {
	for i := 0; i < len(command); i++ {
		c := command[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte(" \t_./:=,+@%^-~", c) >= 0:
		default:
			return false
		}
	}
	for _, w := range strings.Fields(command) {
		switch w {
		case "case", "coproc", "do", "done", "elif", "else", "esac", "fi", "for", "function",
			"if", "in", "select", "then", "time", "until", "while":
			return false
		}
	}
	return true
}

// checkSyntax runs `bash -n` on command (with extglob on, so a pattern the session may
// have enabled is never refused) and returns a *SyntaxError when bash refuses it.
func (s *Session) checkSyntax(ctx context.Context, command string) error {
	if plainCommand(command) {
		return nil
	}
	h, err := s.svc.Spawn(ctx, subprocess.Spec{
		Path: s.bash, Args: []string{"-O", "extglob", "-n"},
		Stdin:   subprocess.Input{Kind: subprocess.InputBytes, Data: []byte(command + "\n")},
		Stdout:  subprocess.Output{Disposition: subprocess.Discard},
		Stderr:  subprocess.Output{TailBytes: 4096},
		Timeout: syntaxTimeout, Grace: time.Second,
	})
	if err != nil {
		return &Error{Op: "run", ID: s.id, Err: err, Hint: "the syntax check (bash -n) could not start; nothing ran"}
	}
	res, err := h.Wait(ctx)
	if err != nil {
		tctx, cancel := context.WithTimeout(context.Background(), 2*time.Second+syntaxTimeout)
		terr := h.Terminate(tctx)
		cancel()
		return &Error{Op: "run", ID: s.id, Err: errors.Join(err, terr, h.Close()), Hint: "nothing ran"}
	}
	if err := h.Close(); err != nil {
		return &Error{Op: "run", ID: s.id, Err: err, Hint: "the syntax check (bash -n) could not be cleaned up; nothing ran"}
	}
	switch {
	case res.ExitCode == 0:
		return nil
	case res.ExitCode > 0:
		msg := strings.TrimSpace(strings.ReplaceAll(string(res.Stderr.Tail), s.bash+": ", "bash: "))
		if msg == "" {
			msg = fmt.Sprintf("bash -n exited with status %d", res.ExitCode)
		}
		return &SyntaxError{Command: command, Message: msg}
	}
	return &Error{Op: "run", ID: s.id, Err: fmt.Errorf("bash -n ended by %s (timed out: %v)", res.Signal, res.TimedOut),
		Hint: "nothing ran"}
}
