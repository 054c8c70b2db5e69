package subprocess

import (
	"context"
	"errors"
	"time"

	"github.com/subkit/subkit/internal/done"
)

// Usage is what the leader consumed, from its wait status: its own CPU time and peak memory,
// and those of the descendants it waited for (as os.ProcessState reports them). It is zero
// where the status came without it (macOS, Windows) or is unknown (Result.ExitErr).
type Usage struct {
	User   time.Duration // CPU time in user mode
	System time.Duration // CPU time in the kernel
	// MaxRSS is the largest resident set size of the leader or one of those descendants, in
	// bytes, as the kernel counts it. On Linux it is never below the size of the process that
	// forked the leader (os/exec's vfork shares that process's memory until exec, and exec
	// keeps its high-water mark): the host's, or the guard's (about 9 MiB) with Config.Guard.
	MaxRSS int64
}

// Run spawns spec on svc, waits for its result and closes the handle: the common case in one
// call. Its error is the spawn's or the wait's (ctx ended: the tree is terminated first, and
// the Result is what was collected until then, Cancelled); a program that failed is not an
// error here (see Outcome.Err).
func Run(ctx context.Context, svc *Service, spec Spec) (Result, error) {
	if err := checkCtx("run", spec.Path, ctx); err != nil {
		return Result{}, err
	}
	h, err := svc.Spawn(ctx, spec)
	if err != nil {
		return Result{}, err
	}
	res, werr := h.Wait(ctx)
	cerr := h.Close()
	if werr != nil {
		if done.Closed(h.Done()) { // Close settled it: return what it had
			res, _ = h.Wait(context.Background())
		}
		return res, werr
	}
	if cerr != nil && !errors.Is(cerr, ErrClosed) {
		return res, cerr
	}
	return res, nil
}
