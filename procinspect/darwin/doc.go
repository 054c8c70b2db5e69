// Package darwin reads the macOS process table with one ps(1) run.
//
// The parser ([Parse]) is plain Go and builds everywhere, so it is tested on
// any OS against recorded macOS output in testdata/. The runner ([Snapshot],
// [Lookup]) exists on darwin only.
//
// # Columns
//
// Snapshot runs
//
//	/bin/ps -axww -o pid=,ppid=,pgid=,tpgid=,tdev=,state=,lstart=,comm=
//
// with the environment LC_ALL=C and TZ=UTC0, chosen as follows (keywords as
// defined in Apple's adv_cmds ps/keyword.c):
//
//   - pid, ppid, pgid, tpgid: plain decimal ids.
//   - tdev: the controlling terminal as "major/minor", or "??" when there is
//     none. Parse re-encodes it as a Darwin dev_t (major<<24 | minor), the
//     value stat(2) reports as st_rdev for the terminal device.
//   - state: letters such as "Ss+"; the first letter is 'Z' for a zombie.
//   - lstart: the start time, printed with strftime("%c", localtime(...)).
//     LC_ALL=C fixes the format to "Mon Jan  2 15:04:05 2006" (day padded
//     with a space) and TZ=UTC0 makes localtime UTC, so the value parses to
//     the same Unix second on any machine. That second is the start token
//     of an Identity on macOS. It has one-second resolution, which is
//     enough: macOS hands out pids sequentially (wrapping at 99999), so a
//     pid comes back within the same second only after the whole pid space
//     has been cycled through.
//   - comm: last, because it is the only column that may contain spaces
//     (it is usually the full executable path, for instance
//     "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome"; for a
//     process whose arguments ps may not read it is the short name in
//     parentheses). ps escapes tabs and newlines in it (strvis), so one
//     process is one line. -ww lifts the width limit so it is never cut.
//
// All headers are empty ("pid=" ...), so ps prints no header line; Parse
// also skips one if a ps version prints it anyway.
//
// # Sessions
//
// macOS ps has no column holding a real session id: its sess keyword prints
// the kernel's session pointer (format %lx), which the kernel redacts to 0,
// and there is no sid keyword. Snapshot therefore fills Record.Sid after the
// ps run by calling getsid(2) for each pid; on macOS getsid works for any pid
// without privilege. A process that exited between the ps run and getsid
// (or that getsid refuses, such as a zombie) keeps Sid == -1, meaning
// unknown. That is one system call per process, no extra process spawned.
package darwin
