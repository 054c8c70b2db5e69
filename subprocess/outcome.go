package subprocess

import (
	"fmt"
	"time"

	"github.com/subkit/subkit/sandbox"
)

// Outcome is how one run of a program ended: its exit status or the signal that ended it,
// whether a timeout or the caller ended it first, how long it took, whether processes it
// started held its output past the drain grace, and how it was confined. Result embeds it, and
// so do the adapters' results (bash.Result, coderuntime.Result, lsp.Exit): its fields and its
// methods Success and Err mean the same wherever they are read, and each adapter says only
// which timeout and which ways of cancelling are its own.
//
// The output streams are not part of it, although Result and bash.Result both keep them as
// StreamResults: coderuntime's Output is a text tail shared with a session cell's output,
// which no collected stream produces, and an LSP server's stdout is its protocol, so only its
// stderr is kept. Each result names its streams next to the Outcome it embeds.
type Outcome struct {
	// ExitCode is the program's exit status (the tree's leader), or -1 when a signal ended it
	// or the status is unknown (ExitErr).
	ExitCode int
	// Signal names the signal that ended the program ("SIGKILL", "SIGTERM"), or is "" when it
	// exited by itself.
	Signal string
	// ExitErr says why the exit status is unknown (ExitCode is then -1): for instance,
	// something else in the host process reaped the program. It is nil otherwise.
	ExitErr error
	// TimedOut is true when the run's timeout (Spec.Timeout, or the adapter's) expired before
	// the result settled and the tree was terminated: while the program ran, or while the
	// drain waited for descendants that held its output. A program that exited, its output
	// drained, before the timeout is never TimedOut.
	TimedOut bool
	// Cancelled is true when the caller ended the tree before the result settled and it did
	// not time out: for a Handle, Terminate, Close or Service.Close; each adapter lists its
	// own ways (a context that ended, its Close). A program that exited, its output drained,
	// before the request is not Cancelled.
	Cancelled bool
	// Duration is the run's wall time, from the spawn to the settled result.
	Duration time.Duration
	// PipesHeld is true when descendants still held a collected output pipe open (for a
	// terminal, the terminal) after the program exited and the drain grace (Spec.DrainGrace)
	// ran out: the result settled without waiting for them, and what they wrote after is not
	// in it. A Handle reads their output on (Handle.ReadOutput) until they close the pipe or
	// Terminate or Close ends them; the adapters say what they do with such processes.
	PipesHeld bool
	// Sandbox says which backend confined the tree and what it could not enforce; nil for a
	// tree that ran unconfined.
	Sandbox *sandbox.Report
}

// Success reports whether the program exited by itself with status 0: a known status, no
// signal, no timeout, not cancelled.
func (o Outcome) Success() bool {
	return o.ExitCode == 0 && o.Signal == "" && o.ExitErr == nil && !o.TimedOut && !o.Cancelled
}

// Err is nil when the run succeeded (Success), else an *ExitError that says how it ended, for
// callers that treat a failed program as an error (as os/exec's Run does).
func (o Outcome) Err() error {
	if o.Success() {
		return nil
	}
	return &ExitError{Outcome: o}
}

// ExitError is a run that did not succeed: a non-zero status, a signal, a timeout, a
// cancellation or an unknown status. The result it came from has the output.
type ExitError struct {
	Outcome Outcome
}

func (e *ExitError) Error() string {
	o := e.Outcome
	var s string
	switch {
	case o.ExitErr != nil:
		s = "exit status unknown: " + o.ExitErr.Error()
	case o.Signal != "":
		s = "signal: " + o.Signal
	default:
		s = fmt.Sprintf("exit status %d", o.ExitCode)
	}
	switch {
	case o.TimedOut:
		s = "timed out after " + o.Duration.Round(time.Millisecond).String() + " (" + s + ")"
	case o.Cancelled:
		s = "cancelled after " + o.Duration.Round(time.Millisecond).String() + " (" + s + ")"
	}
	return s
}

// Unwrap returns the reason the status is unknown, when it is.
func (e *ExitError) Unwrap() error { return e.Outcome.ExitErr }
