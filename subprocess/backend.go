package subprocess

import (
	"context"
	"os"
	"os/exec"

	"github.com/subkit/subkit/internal/ending"
	"github.com/subkit/subkit/procinspect"
)

// backend is the seam to the per-OS process-tree code (internal/posix, internal/windows).
type backend interface {
	envRules() envRules
	pathRules() pathRules
	// prepare sets the attributes that detach the child into a tree of its own.
	prepare(cmd *exec.Cmd)
	// start starts a prepared command (from the Service's spawning thread, or through its
	// guard) and returns its tree, which from then on owns the wait for its leader (the caller
	// never calls cmd.Wait nor uses cmd.Process), and the leader's pid. On error nothing is
	// left running.
	start(cmd *exec.Cmd) (tree, int, error)
	// startError classifies a failed start: the kind, and a hint when there is one.
	startError(err error) (kind error, hint string)
	// sweep ends the processes that left their trees but carry the Service's mark; a no-op
	// where nothing can be found that way.
	sweep(ctx context.Context) error
	// setRoot tells the backend the runtime root, which a guard removes when the host is gone.
	setRoot(root string) error
	// guardState returns a channel closed when the guard running now dies, one closed when a
	// newer guard starts, and what ends the processes that guard adopted once it is dead; all
	// nil without a guard.
	guardState() (lost, next <-chan struct{}, endAdopted func(context.Context) error)
	// close releases what the backend holds (its guard too), once every tree is gone.
	close(ctx context.Context) error
}

// tree is one spawned process tree as the backend sees it.
type tree interface {
	signal(sig os.Signal) error
	// term is the graceful stop request (SIGTERM to the group) and kill the forced stop
	// (SIGKILL); with sweep, also to the processes that left the group but carry the tree's
	// mark.
	term(sweep bool) error
	kill(sweep bool) error
	// rediscover returns what escaped the tree while it was being ended, as a target to end
	// in turn; nil where nothing escapes.
	rediscover(ctx context.Context) (ending.Target, error)
	// exited is closed once the leader has exited; exit then says how.
	exited() <-chan struct{}
	exit() exitInfo
	// alive reports whether members other than an exited leader may remain. Once it has
	// reported false it never reports true again, and the tree is never signalled again.
	alive() bool
	waitGone(ctx context.Context) error
	members(ctx context.Context) ([]procinspect.Proc, error)
}

// exitInfo is how a leader ended.
type exitInfo struct {
	code   int    // -1 when a signal ended it or the status is unknown
	signal string // "SIGKILL", ... or ""
	err    error  // why the status is unknown, or nil
	usage  Usage
}
