package bash

import (
	"context"
	"time"

	"github.com/subkit/subkit/procinspect"
	"github.com/subkit/subkit/subprocess"
)

// Result is how a command ended.
type Result struct {
	Command string
	Argv    []string // what was run: bash -c Command
	Pid     int      // the shell's pid, also its process group id on POSIX
	// Outcome is how the shell ended. TimedOut is the foreground timeout's (Timeout; a
	// background command has none). Cancelled: the caller ended the command before it
	// finished (Exec's ctx, Process Terminate or Close, or the Executor's Close) and the
	// process group was terminated. PipesHeld: a process the shell started kept an output
	// pipe open past the drain grace; output written after that is not in the result.
	// Sandbox says how the command was confined (Config.Sandbox), or is nil.
	subprocess.Outcome
	// Timeout is the foreground timeout that applied (after the MaxTimeout cap); 0 for a
	// background command.
	Timeout time.Duration
	// Stdout and Stderr hold each stream's tail, total size, truncation and spill file.
	Stdout, Stderr subprocess.StreamResult
	// Lingering: members of the command's process group were still running when the shell
	// exited (a `server &`). The executor owns them until they exit or it is closed.
	Lingering bool
	// Survivors identifies the lingering processes, as listed right after the shell exited.
	// It may be empty although Lingering is set when the platform cannot list them
	// (SurvivorsErr says why).
	Survivors    []procinspect.Proc
	SurvivorsErr error
}

// newResult is r as a command's result; the caller sets Timeout and Cancelled.
func newResult(command string, h *subprocess.Handle, r subprocess.Result) Result {
	return Result{Command: command, Argv: h.Argv(), Pid: r.Pid, Outcome: r.Outcome, Stdout: r.Stdout, Stderr: r.Stderr}
}

// Bounds of the liveness checks on a settled handle's tree.
const (
	goneProbe   = 20 * time.Millisecond // how long a just-settled tree may take to empty
	listTimeout = 15 * time.Second      // bound of one survivor listing (a busy machine slows the scan)
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
