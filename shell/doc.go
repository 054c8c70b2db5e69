// Package shell runs stateful shell sessions for a model: one interactive bash per session,
// on a terminal (pty) of its own, where a cd, an export, a function or an activated
// virtualenv stays for the next command, and a REPL, a debugger or a dev server can be typed
// into and watched.
//
// The bash executor (package bash) runs a fresh `bash -c` per call: nothing survives but the
// file system. A Session is the stateful counterpart, the pty consumer the subprocess
// Service's terminals were made for. Open starts a non-login interactive bash that reads no
// startup file of the user (no ~/.bashrc, no history file), in the bash executor's
// model-friendly environment (NO_COLOR=1, PAGER=cat, GIT_PAGER=cat, GH_PAGER=cat,
// GIT_TERMINAL_PROMPT=0, PYTHONUNBUFFERED=1, after the Service's credential scrub) but for a real terminal type
// (TERM=xterm-256color, so full-screen programs draw their screens) and git's editors
// (GIT_EDITOR and GIT_SEQUENCE_EDITOR fail with a message saying how to give the text on the
// command line, so `git rebase -i` never succeeds without doing what was asked); LANG=C.UTF-8
// (LC_CTYPE=UTF-8 on macOS) when no locale is set, so names like résumé_文件.txt print as they
// are; on a wide terminal (200x50) so output does not wrap. The terminal echoes what Write
// types, as it would for a person (a password prompt turns echo off; commands given to Run
// are not typed, so they do not show). It runs under the Service's guard and sandbox (subprocess.Config.Guard,
// Config.Sandbox) when the Service has them.
//
// # Steps
//
// Run sends a command and waits until it finishes, the shell ends, the foreground program
// waits for input, or the yield passes; Write
// types characters for whatever holds the terminal's foreground (the command, a REPL it
// started, or the shell itself); Poll waits and reports; Interrupt sends Ctrl-C (SIGINT) to the
// foreground process group. Each returns a Step: the output since the previous Step (its
// head and its tail when it is longer than Config.MaxOutputBytes, with a mark saying how many
// bytes were left out) and a state:
//
//   - completed: the shell is back at its prompt; the command's exit status, the shell's cwd
//     and the duration;
//   - waiting_for_input: the foreground program is blocked reading the terminal and its
//     output has been quiet for Config.InputSettle (100 ms): a `read -p` prompt, grep reading
//     stdin, a REPL's ">>> ", a password prompt (Step.Input.EchoOff). The Step returns then,
//     not at the yield, with the prompt's text (Step.Input.Prompt): a REPL line answered in
//     milliseconds comes back in about InputSettle. Linux only (see below);
//   - running: the command, or a program it runs in the foreground, is still there; the Step
//     names the foreground process group's command ("python3", "sleep", or "bash" for a
//     builtin loop), so a model can tell a build from a shell;
//   - exited: the shell has ended, with its status.
//
// # Waiting for input
//
// On Linux the session looks at the foreground process group once its output has been quiet
// for half the settle and again at its end: every member asleep, one of them blocked in a
// read of the terminal (read on the pty or /dev/tty, or select, poll or epoll with the
// terminal among the descriptors it waits to read, from /proc/PID/syscall, its memory and
// fdinfo), and no member run in between (the same syscall and context-switch counts). The
// terminal's modes come from a duplicate of the reader's descriptor (pidfd_getfd): line mode
// (ICANON), and echo off in line mode, which is how a password prompt looks. Where the
// kernel does not show the syscall (no ptrace access), the wait channel is the evidence, and
// it takes four settles. A program blocked reading a pipe or a socket, sleeping, or running
// is never taken for one waiting for input. A program that reads the terminal with a timeout
// (top) is reported waiting between its refreshes: Poll again to watch it. On macOS and other
// systems the evidence is not read (kinfo_proc's wait message "ttyin" and the pty's modes
// through TIOCGETA would be the way): such a program is reported running at the yield.
//
// A command with a syntax error is refused before anything runs (`bash -n`; commands of plain
// words skip the check). The whole transcript is readable by offset (ReadTranscript), in the
// same whole-stream coordinates as the Service's output reads, within Config.TranscriptBytes.
//
// # Full-screen programs
//
// A program that switches the terminal to its alternate screen (vim, less, top, htop, watch)
// draws a screen rather than writing lines. From that switch until it switches back (or the
// shell's next prompt, if it never does), its bytes go to a terminal emulator
// (charmbracelet/x/vt) instead of Output and the transcript, and each Step carries the screen
// as text in Step.Screen: Config.Rows lines of at most Config.Cols characters, trailing blanks
// trimmed, what a person would see. The emulator answers the program's queries (device
// attributes, cursor position) through the pty, as a terminal would. Keys typed with Write go
// to the program as they are ("\x1b" is Escape, "\r" Enter). Line-mode output is unchanged.
//
// # Command boundaries
//
// Every session has a random nonce. PROMPT_COMMAND prints a marker before each prompt, an
// escape sequence carrying the nonce, the command's number, its exit status and the shell's
// cwd; the markers are removed from the output, and so are exactly the lines in which the
// terminal or bash echoes the session's own machinery (the typed line, set -x of its source,
// set -v of PROMPT_COMMAND). A user's line that carries the nonce (declare -f, echo
// $PROMPT_COMMAND, env) is output like any other, and a look-alike marker without the nonce
// too. bash's messages about the command file read as a prompt's ("bash: line 1: ..."), so a
// syntax error that `bash -n` let through shows bash's own message. PS1, PS2 and PS0 are
// empty, so no prompt text shows. Each command is sourced from a private file: the shell's
// state changes exactly as if it had been typed, without the terminal's 4,095-byte line limit.
//
// The boundaries hold through what agent shells are known to trip on:
//
//   - set -euo pipefail: under set -e the first failure ends the command, as in a script,
//     and the shell stays open (an interactive bash would exit; see rc.go for how). At an
//     expansion error under set -e (an unbound variable with set -u, ${x:?}, a bad
//     substitution) bash exits at once: the session puts a new bash in its place (the same
//     pid, by exec) with the same cwd, variables, functions, aliases, options and traps, and
//     the Step says completed with status 1 and a note. Only exit or logout ends the shell.
//   - set -x and set -v: the session's own lines are left out; the command's traces stay.
//   - PS1/PS0/PS2 set by the command (a virtualenv's activate): cleared again at the next
//     prompt, with a note. PROMPT_COMMAND replaced or unset: the session puts its hook back
//     in front of it, with a note (a hook of the user's then prints after the marker, so its
//     output opens the next Step).
//   - \r progress bars: kept raw in the transcript; Render (and so Step.Output) shows what a
//     terminal would, the last state of each line.
//   - output without a trailing newline, and `exec >file`: the marker goes to /dev/tty.
//   - exec bash, or a nested bash: PROMPT_COMMAND is exported, and in a bash that lacks the
//     session's functions it sources the session's rc file first, so the new shell prints
//     markers too (each carries its bash's instance: a marker of another instance ends the
//     command in progress). Exit codes and the cwd stay right, and exit in a nested bash
//     returns to the one before, its status the command's. A startup file that replaces
//     PROMPT_COMMAND loses this: the shell is then a program with its own prompt.
//   - a REPL or another program with its own prompt (sh, zsh, python, ssh, su): no marker
//     comes while it holds the foreground; the Step says waiting_for_input at its prompt,
//     running otherwise, with its name, and Write types into it.
//
// Memory stays bounded whatever the output: the terminal's buffer, the transcript ring and one
// Step's head (a 50 MB flood keeps a few MiB).
//
// # Ownership
//
// A Session (or Manager) runs on a subprocess Service. Given one (Config.Service), it belongs
// to the caller and is never closed by the session; its environment rules, guard and limits
// apply. Without one, the session makes its own from Config.ServiceConfig and closes it at
// Close. Close ends the shell and everything it started, jobs, nohup'd and setsid children
// included (the terminal's identity-fenced cleanup), releases the pty, and removes the
// session's private files.
//
// # Manager
//
// A Manager keeps sessions by short numeric id ("1", "2", ...) for a tool that hands ids to a
// model, on one shared Service: at most 64 by default; one more prunes the least recently
// used exited session, else the least recently used, never one of the 8 most recently used.
// List reports each session's state, cwd and idle time; Close closes them all.
//
// # Errors
//
// Every error is an *Error, a *ConfigError or a *SyntaxError wrapping one of ErrInvalid,
// ErrNotFound, ErrUnsupported, ErrClosed, ErrBusy, ErrExited, ErrSyntax or ErrStart (or the
// Service's kinds, or a context's error). Methods of a nil or zero Session or Manager, and
// calls given a nil context, a negative or too long yield or an oversized command, return
// ErrInvalid; nothing panics. Run and Write return an error only when their input was not
// sent, except when the context ends while they wait (the command goes on).
//
// Sessions need terminals: Linux and macOS (bash 4 or later; tested with bash 5 on Linux).
// On Windows Open fails with ErrUnsupported.
package shell
