// Package sandbox confines a program to a Policy: writable roots (everything else read-only),
// hidden paths (neither readable nor listable), the network off or on, and resource limits,
// enforced without root, and it says which mechanism enforced what.
//
// # How a program is confined
//
// Go cannot run code between fork and exec, so the confinement is applied by the kit's helper
// (the host's own binary re-executed, see subprocess.HelperMain, or the subkit CLI) to itself,
// just before it execs the program. New probes the backends once, by really confining the
// helper with each and letting it check from inside that the confinement holds (a write
// outside fails, a hidden file cannot be read, a socket is refused, the helper can still exec),
// and keeps what works. Prepare turns a Policy and a Program into a Launch: what to start
// instead of the program (the helper, behind unshare(1) or bwrap(1) when the backend needs
// them), with the program's path and plan in the environment and each of its arguments still
// its own argv entry (never packed into one string, which Linux caps at 128 KiB). The caller
// starts the Launch as it would have started the program; Main, in the helper, applies the
// plan and execs the program. Nothing ever runs the program unconfined: a step that fails
// ends the helper with status 126 and one line on stderr saying which step.
//
// The backends, in the order tried:
//
//   - Namespaces: the helper starts in new user (this uid and gid mapped to themselves),
//     mount, pid and IPC namespaces (and network, with the network off; Launch.SysProcAttr
//     says so) and, as the namespace's init, builds the program's view: / read-only
//     recursively (so chmod, utimes and sysctl writes fail with EROFS, root included), its own
//     read-only /proc, a minimal /dev with a devpts instance of its own and a private shm,
//     private /tmp, /var/tmp, /run and $XDG_RUNTIME_DIR (no host socket there, no other
//     program's files), the writable roots bound, hidden paths mounted over, protected paths
//     bound read-only, and the directories and links of a writable root on the way to a hidden
//     or protected path bound onto themselves (so they cannot be renamed, removed or
//     re-pointed). With the network off it also answers the program's connect(2) calls
//     (seccomp user notification), connecting only to sockets the Policy allows. It then starts itself again, in a new session, to confine itself as the
//     Landlock backend does (Landlock keeping out hidden paths that appear later) and exec the
//     program; it passes the kit's signals on to every process of the namespace and exits
//     with the program's status, which ends whatever the program left inside.
//   - Landlock: Landlock (the filesystem rules below; with the network off, TCP bind and
//     connect too, from ABI 4; signals to and abstract Unix sockets of processes outside, from
//     ABI 6), then the limits, then every capability dropped (the bounding set too, so a root
//     program has none after exec), then a seccomp filter, all on the helper's thread that
//     execs the program with NO_NEW_PRIVS set: the program keeps the helper's pid. The filter
//     refuses ptrace and process_vm_*, every mount call, pivot_root, chroot, setns, unshare and
//     clone of new namespaces (clone3 gets ENOSYS, so that libc falls back to clone, whose
//     flags a filter can read), keyctl, add_key, request_key, bpf, perf_event_open,
//     open_by_handle_at, modules, kexec, reboot, swap, io_uring (whose requests no filter sees),
//     and TIOCSTI (typing into the terminal); with the network off, socket and socketpair of
//     any family but AF_UNIX. Calls of another architecture's table (int 0x80 from an x86-64
//     process) kill the process. Where no seccomp filter can be loaded, the network is cut
//     instead by a user and network namespace: util-linux's unshare --user --map-current-user
//     --net in front of the helper (it execs in place, so the pid is still the program's; Go
//     itself cannot unshare a user namespace once it runs threads), and the Report lists what
//     only the filter refuses.
//   - Bubblewrap: bwrap(1) with new user, pid and IPC namespaces (and network, with the network
//     off), / bound read-only, its own /dev and /proc, the writable roots bound read-write,
//     each hidden directory covered by an empty tmpfs of mode 0000 and each hidden file by
//     /dev/null; the helper then runs inside and adds the limits, the capability drop,
//     NO_NEW_PRIVS and the same seccomp filter. The program is a child of bwrap (another pid),
//     which reports a program killed by signal N as exit status 128+N. bwrap fails where
//     unprivileged user namespaces are refused (AppArmor's restriction, Docker's default
//     seccomp profile); the probe runs it for real, so such a bwrap is reported missing.
//
// # Hiding a path with Landlock
//
// Landlock rules only add access: a grant on a directory covers everything beneath it, and
// nothing can take a part back. So the Landlock backend does not grant read on / and cut the
// hidden paths out; it grants read on every sibling of every ancestor of a hidden path, and
// on the ancestors themselves nothing but, when no hidden directory lies beneath them,
// listing. For Hidden = ~/.ssh with HOME=/home/u it grants /bin, /etc, /usr, ... and
// /home/u/.bashrc, /home/u/src, ..., but not /, /home or /home/u as wholes. The limits of this:
//
//   - An ancestor of a hidden directory cannot be listed (ls / and ls ~ fail with the default
//     hidden paths), though each of its entries can be used by name. The Report's Notes name
//     these directories.
//   - Entries made in an ancestor after the program started (a new file in ~) are not
//     readable by it: the grants were made for the entries that existed.
//   - A writable root that holds a hidden path (a workspace with its .env hidden) keeps its
//     existing entries writable, but no entry can be made or removed directly in it (nor in
//     the directories between it and the hidden path), since any right on the root would
//     reach the hidden path too. The Report's Notes say so; bwrap has no such limit.
//   - Landlock works on paths: a hard link or a bind mount made beforehand gives the same file
//     another path, and the file is then reachable by that path. A hard link the program makes
//     itself to a file outside its writable roots is refused (Landlock's "refer" rule).
//   - A symbolic link among the siblings is not granted itself: the access is checked where it
//     points, so a link into a hidden path stays closed.
//
// /dev is treated the same way: it can be listed, and only null, zero, full, random, urandom,
// tty, ptmx and the ptys under /dev/pts can be opened (read, write and ioctl), so that a
// program in a terminal works (the host opens the pty; the program needs its tty and may open
// ptys of its own), while the block devices, which would give a root program the raw disk,
// cannot. /dev/shm is neither readable nor writable unless it is a writable root.
//
// # What is not enforced
//
// Every Launch carries a Report: the backend, how the network is cut ("off by seccomp", "off
// by namespace", "off by seccomp and namespace", or "on"), the resolved writable roots and
// hidden paths, and Unenforced, the sentences of what this backend cannot enforce here: for
// example connect(2) to pathname Unix sockets outside the writable roots (an ssh-agent's
// socket) below Landlock ABI 9, chmod and utimes of the user's own files outside the writable
// roots (Landlock has no metadata right; bwrap's read-only mounts refuse them), or
// Limits.Processes when the program runs as uid 0, whom the kernel exempts from
// RLIMIT_NPROC. LikelyDenial turns a program's stderr and exit status into one line saying
// which refusal is likely behind a failure; Report.LikelyDenial also names the hosts the
// network allow-list refused.
//
// NetworkAllowList gives the program a network namespace with only loopback, where the init
// passes 127.0.0.1:ProxyPort on to the allow-list proxy the caller runs outside
// (Program.Proxy; subprocess runs internal/netproxy for it) and the proxy variables point
// ordinary clients at it.
//
// Linux only: elsewhere New fails with ErrUnsupported.
package sandbox
