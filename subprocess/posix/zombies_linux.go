package posix

import (
	"context"

	"github.com/subkit/subkit/procinspect"
)

// zombiesOnly reports whether every process in group pgid is a zombie. It checks the members
// it saw last time first (one small read each) and reads the whole table only when none of
// them is a live member any more; members holds that list between calls.
func zombiesOnly(pgid int, members *[]int) bool {
	ctx := context.Background()
	for _, pid := range *members {
		if p, err := procinspect.Lookup(ctx, pid); err == nil && p.Pgid == pgid && !p.Zombie {
			return false
		}
	}
	tab, err := procinspect.Snapshot(ctx)
	if err != nil {
		return false
	}
	*members = (*members)[:0]
	only := true
	for _, p := range tab.Group(pgid) {
		if !p.Zombie {
			*members = append(*members, p.Pid)
			only = false
		}
	}
	return only
}
