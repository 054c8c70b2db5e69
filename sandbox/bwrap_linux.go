package sandbox

// bwrapArgs is bwrap's command line for r, up to (not including) the "--" before the helper:
// new user, pid and IPC namespaces (and network, with the network off), a new session unless
// the program has a terminal of its own, / bound read-only, then the mounts of ops.
func bwrapArgs(bwrap string, r *resolved, ops []mountOp) []string {
	// No --die-with-parent: it is a parent-death signal, which follows the thread that started
	// bwrap (golang/go #27505), and a Go host's threads may end before the tree; the kit ends
	// the whole process group instead.
	args := []string{bwrap, "--unshare-user", "--unshare-pid", "--unshare-ipc"}
	if r.networkOff {
		args = append(args, "--unshare-net")
	}
	if !r.prog.Terminal {
		args = append(args, "--new-session")
	}
	args = append(args, "--ro-bind", "/", "/")
	args = append(args, bwrapMountArgs(ops)...)
	return append(args, "--chdir", r.prog.Dir)
}
