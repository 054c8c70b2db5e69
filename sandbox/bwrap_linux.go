package sandbox

import (
	"cmp"
	"slices"
	"strings"
)

// bwrapArgs is bwrap's command line for r, up to (not including) the "--" before the helper:
// new user, pid and IPC namespaces (and network, with the network off), / bound read-only,
// bwrap's own /dev and /proc, the writable roots bound read-write and the hidden paths covered
// (an unreadable empty tmpfs over a directory, /dev/null over a file), outermost first so that
// a writable root beneath a hidden directory is bound over its cover and a hidden path beneath
// a writable root covers its part of the bind.
func bwrapArgs(bwrap string, r *resolved) []string {
	// No --die-with-parent: it is a parent-death signal, which follows the thread that started
	// bwrap (golang/go #27505), and a Go host's threads may end before the tree; the kit ends
	// the whole process group instead.
	args := []string{bwrap, "--unshare-user", "--unshare-pid", "--unshare-ipc"}
	if r.networkOff {
		args = append(args, "--unshare-net")
	}
	args = append(args, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc")
	type op struct {
		path string
		args []string
	}
	var ops []op
	for _, w := range r.writable {
		ops = append(ops, op{w, []string{"--bind", w, w}})
	}
	for _, h := range r.hidden {
		if h.Dir {
			ops = append(ops, op{h.Path, []string{"--perms", "0000", "--tmpfs", h.Path}})
		} else {
			ops = append(ops, op{h.Path, []string{"--ro-bind", "/dev/null", h.Path}})
		}
	}
	slices.SortStableFunc(ops, func(a, b op) int {
		return cmp.Or(cmp.Compare(strings.Count(a.path, "/"), strings.Count(b.path, "/")), strings.Compare(a.path, b.path))
	})
	for _, o := range ops {
		args = append(args, o.args...)
	}
	return append(args, "--chdir", r.prog.Dir)
}
