// Package darwin reads the macOS process table with one sysctl(3) kern.proc read.
//
// The decoder ([Decode]) and the selection logic ([Pick], [Record.Is], [FillSessions])
// are plain Go and build everywhere, so they are tested on any OS against kinfo_proc
// records built byte by byte from the layout golang.org/x/sys/unix declares. The readers
// ([Snapshot], [Lookup], [Alive]) exist on darwin only.
//
// # The read
//
// Snapshot reads kern.proc.all and Lookup and Alive read kern.proc.pid.<pid>, each through
// unix.SysctlKinfoProcSlice: one sysctl for the size and one for the records (again when
// the table grew in between), no process spawned. The kernel answers with an array of
// struct kinfo_proc, zombies included; for a pid that does not exist it answers with none.
// Decode reads from each record:
//
//   - p_pid, e_ppid (the current parent), e_pgid.
//   - p_starttime, a struct timeval. Its microseconds since the Unix epoch are the start
//     token of an Identity on macOS. The kernel takes it from the calendar clock once, at
//     fork, and never changes it, so a token read twice is the same; unlike ps(1)'s
//     lstart column (whole seconds, printed through the local time zone) it tells apart
//     two processes that had the same pid within one second. Only a step of the wall
//     clock backwards between a parent's fork and its child's can give a child a smaller
//     token than its parent (which the tree walks of package procinspect then fence out).
//   - p_stat: StatZombie for a process that exited and waits to be reaped.
//   - e_tdev, the controlling terminal as a Darwin dev_t (major<<24 | minor), NODEV when
//     there is none, and e_tpgid, its foreground process group.
//   - p_comm: the executable's name, which the kernel keeps to 16 bytes (not its path).
//
// Offsets are those of x/sys's KinfoProc, identical on amd64 and arm64; layout_darwin.go
// checks each of them against that type at compile time, and the tests check them
// against a field-for-field copy of its declaration.
//
// # Sessions
//
// struct kinfo_proc holds no session id (its e_sess pointer is not filled in), so
// Snapshot and Lookup fill Record.Sid right after the read by calling getsid(2) for each
// live process; on macOS getsid works for any pid without privilege. A process that
// exited in between (ESRCH), a zombie and pid 0 (kernel_task, for which getsid(0) would
// answer about the caller) keep Sid == -1, meaning unknown. That is one system call per
// process; Alive needs no session and makes none.
package darwin
