package bash

import (
	"context"
	"time"

	"github.com/subkit/subkit/procinspect"
	"github.com/subkit/subkit/sandbox"
	"github.com/subkit/subkit/subprocess"
)

// Result is how a command ended.
type Result struct {
	Command string
	Argv    []string // what was run: bash -c Command
	Pid     int      // the shell's pid, also its process group id on POSIX
	// ExitCode is the shell's exit status, or -1 when a signal ended it.
	ExitCode int
	// Signal names the signal that ended the shell ("SIGKILL"), or is "".
	Signal string
	// TimedOut: the foreground timeout expired and the process group was terminated.
	TimedOut bool
	// Timeout is the foreground timeout that applied (after the MaxTimeout cap); 0 for a
	// background command.
	Timeout time.Duration
	// Cancelled: the caller ended the command before it finished (Exec's ctx, Process
	// Terminate or Close, or the Executor's Close) and the process group was terminated.
	Cancelled bool
	Duration  time.Duration
	// Stdout and Stderr hold each stream's tail, total size, truncation and spill file.
	Stdout, Stderr subprocess.StreamResult
	// PipesHeld: after the shell exited, a process it started kept an output pipe open past
	// the drain grace; output written after that is not in the result.
	PipesHeld bool
	// Lingering: members of the command's process group were still running when the shell
	// exited (a `server &`). The executor owns them until they exit or it is closed.
	Lingering bool
	// Survivors identifies the lingering processes, as listed right after the shell exited.
	// It may be empty although Lingering is set when the platform cannot list them
	// (SurvivorsErr says why).
	Survivors    []procinspect.Proc
	SurvivorsErr error
	// Sandbox says how the command was confined (Config.Sandbox), or is nil.
	Sandbox *sandbox.Report
}

// ExitedNormally reports whether the shell exited by itself with status 0.
func (r Result) ExitedNormally() bool {
	return r.ExitCode == 0 && r.Signal == "" && !r.TimedOut && !r.Cancelled
}

func newResult(command string, h *subprocess.Handle, r subprocess.Result) Result {
	return Result{
		Command: command, Argv: h.Argv(), Pid: r.Pid, ExitCode: r.ExitCode, Signal: r.Signal,
		TimedOut: r.TimedOut, Duration: r.Duration, Stdout: r.Stdout, Stderr: r.Stderr,
		PipesHeld: r.PipesHeld, Sandbox: r.Sandbox,
	}
}

// Bounds of the liveness checks on a settled handle's tree.
const (
	goneProbe   = 20 * time.Millisecond // how long a just-settled tree may take to empty
	listTimeout = 5 * time.Second       // bound of one survivor listing
)

// treeGone reports whether no member of h's tree is left, waiting at most d for the last
// ones to go. h must have settled.
func treeGone(h *subprocess.Handle, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return h.WaitForExit(ctx) == nil
}

// survivors fills r.Lingering and r.Survivors for a settled handle. It reports whether the
// tree is gone: it may not be although nothing lingers, while exited members wait to be
// reaped by their new parent.
func survivors(h *subprocess.Handle, r *Result) (gone bool) {
	if treeGone(h, goneProbe) {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	procs, err := h.Members(ctx)
	switch {
	case err != nil:
		r.Lingering, r.SurvivorsErr = true, err
	case len(procs) > 0:
		r.Lingering, r.Survivors = true, procs
	}
	return false
}
