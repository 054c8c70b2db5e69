// Package procinspect reads the operating system's process table and names
// processes exactly.
//
// A pid alone does not name a process: once a process is reaped its number
// can be handed to a new, unrelated one. An [Identity] pairs the pid with the
// platform's raw start token, and two identities name the same process only
// if both parts match. The token is whatever the platform records without
// conversion, so it never drifts:
//
//   - Linux: starttime, field 22 of /proc/<pid>/stat, in clock ticks since
//     boot. It is not converted to wall-clock time, because the boot time
//     needed for that moves with NTP adjustments.
//   - macOS: p_starttime of the kernel's struct kinfo_proc, in microseconds
//     since the Unix epoch: the calendar time the kernel recorded at fork,
//     never changed after.
//   - Windows: the creation time the kernel stamped on the process object, a
//     FILETIME (100-nanosecond intervals since 1601-01-01 UTC), read with
//     GetProcessTimes; never changed after. It is 0 for a process that could not
//     be opened (a protected process, another user's without the privilege, and
//     pid 0, the System Idle Process): such a process is never counted as the
//     child of one whose token is known, and [Alive] cannot check its identity.
//
// Tokens are comparable only on one host and, for a given pid, only with
// tokens from the same platform.
//
// [Snapshot] reads the whole table once into a [Table], which answers tree
// questions offline: [Table.Children], [Table.Descendants], [Table.Session]
// and [Table.Group]. Tree walks are start-time fenced: a process counts as a
// child only if it started no earlier than its parent, so a stale parent pid
// that now names a newer, unrelated process does not adopt the old one's
// children. [Lookup] and [Alive] read a single process, and [Environ] reads
// a process's initial environment (Linux only), which lets a caller find
// processes that escaped a tree by an environment cookie it planted.
//
// On Linux the package reads /proc directly (see package
// github.com/subkit/subkit/internal/inspect/linux): one directory listing and one
// small read per process, many times cheaper than general-purpose libraries.
// On macOS each Snapshot, Lookup or Alive makes one sysctl kern.proc read, no
// process spawned (see package github.com/subkit/subkit/internal/inspect/darwin).
// On Windows Snapshot and Lookup make one Toolhelp32 walk and open each process
// they report for its creation time, and Alive opens the one process (see
// package internal/inspect/win); Windows has no process
// groups or sessions, so [Table.Session] and [Table.Group] find nothing useful
// there, and [Environ] is not implemented.
// Elsewhere every call fails with an error wrapping [ErrUnsupported].
//
// Everything here is a point-in-time reading: a process may exit, and its pid
// be reused, right after it was read. Use Identity rather than pids to act on
// what a Table reports.
package procinspect
