package subprocess

import (
	"context"
	"os"
	"os/exec"
)

// backend is the seam to the per-OS process-tree code (subprocess/posix, subprocess/windows).
type backend interface {
	envRules() envRules
	pathRules() pathRules
	// prepare sets the attributes that detach the child into a tree of its own.
	prepare(cmd *exec.Cmd)
	// start starts a prepared command (from the Service's spawning thread, if it has one).
	start(cmd *exec.Cmd) error
	// close releases what the backend holds, once every tree is gone.
	close()
	// attach returns the tree of a started command. On error the leader has been ended and
	// the caller only reaps it.
	attach(cmd *exec.Cmd) (tree, error)
}

// tree is one spawned process tree as the backend sees it.
type tree interface {
	signal(sig os.Signal) error
	term() error // the graceful stop request (SIGTERM to the group)
	kill() error // the forced stop (SIGKILL to the group)
	// alive reports whether members other than an unreaped leader may remain. Once it has
	// reported false it never reports true again, and the tree is never signalled again.
	alive() bool
	waitGone(ctx context.Context) error
	// exitSignal names the signal that ended the leader, or "".
	exitSignal(ps *os.ProcessState) string
}
