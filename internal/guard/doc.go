// Package guard is the Service's guard: one helper process per Service that spawns every tree
// of the Service, is their child subreaper, and ends everything it started or adopted when
// the host is gone, even when the host was killed with SIGKILL.
//
// The host talks to its guard over a Unix socket pair (SOCK_SEQPACKET): it sends each spawn
// request with the child's stdio descriptors (SCM_RIGHTS), and the guard answers with the
// leader's pid, relays the leader's exit status without reaping it, and reaps it when the host
// asks (the host holds the leader, through its guard, until its group is empty, as it does for
// a child of its own). Because the guard is a child subreaper (PR_SET_CHILD_SUBREAPER), every
// process that leaves a tree by double fork or setsid is re-parented to it, whatever its
// environment says, and the guard reaps those as they exit. The guard watches the host by the
// end of file on its socket and by a parent-death signal: when the host is gone it ends every
// tree (group signals, safe because it holds the leaders) and every process it adopted
// (TERM, the grace, KILL), and exits.
//
// Linux only; elsewhere Start fails with an error wrapping errors.ErrUnsupported. The Service
// in the parent package is the only intended caller: see subprocess.Config.Guard and
// subprocess.HelperMain.
package guard
