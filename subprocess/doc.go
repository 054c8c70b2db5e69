// Package subprocess spawns and owns process trees for tools and agent harnesses.
//
// A Service spawns each Spec as a detached tree (on POSIX: a process group of its own) with
// explicit stdio: stdin from the null device unless the Spec gives bytes or asks for a pipe, and
// each output stream collected, piped to the caller, inherited or discarded. A collected stream
// keeps a bounded tail in memory and, when asked, the whole stream in a bounded private spill
// file, and can be read at any byte offset while the process runs and after.
//
// The one kill verb is Handle.Terminate: SIGTERM to every member of the tree, SIGKILL to what
// is left after the grace. A result settles when the leader has exited and its collected pipes
// have drained, or when the drain grace has run out because a daemon still holds them: a
// background child can never hold a result open forever, and Spec.Timeout bounds the whole of
// it. The Result is a snapshot taken then; a daemon the call left running keeps its pipe, which
// the Handle reads on into the same tail and spill until the daemon closes it or Terminate or
// Close ends it. WaitForExit waits until no member of the tree is left.
//
// The leader is held: its exit is learnt from a pidfd in the runtime poller (a kqueue on
// macOS), with no OS thread blocked per tree, and its status is read without reaping it. While
// the unreaped leader exists its pid, and so its process group number, cannot be handed to
// anyone else, so the group signal reaches every member and never a stranger. The leader is
// reaped once its group has no live member; from then on the group is never signalled again.
// Processes that left the group (setsid, double fork) are found on Linux by an environment
// cookie and signalled by exact identity (pid and start time).
//
// Children start from the host environment minus credential-like variables (names matching
// *KEY*, *SECRET*, *TOKEN*, *PASS*, *PWD* but PWD and OLDPWD, *CREDENTIAL*, *AUTH*, *COOKIE*,
// *SESSION*, *DSN*, in any case; values holding scheme://user:password@) and the harness's
// managed prefix, with Config.AllowEnv as the way back; a Spec's Env is merged after and
// wins. Programs are resolved from the scrubbed PATH, never from the current directory
// implicitly.
//
// A pty is one more way to wire a Spec's stdio: with Spec.TTY the program runs as session
// leader on a terminal of its own, and is a Handle like any other, with one Result and one way
// to read and wait. Its output is the Stdout stream, bridged to whole UTF-8 characters and
// read by offset; Write types on the terminal; Resize, Foreground and SignalForeground act on
// the terminal and its foreground process group. Its Terminate fences by exact identity what
// the program started (its descendants, its session, including members that re-parented once
// it exited, what Foreground saw, and on Linux what carries the tree's cookie), and names
// what survived SIGKILL in Error.Survivors.
//
// With Config.Guard (Linux), one helper process per Service spawns every tree, adopts what
// escapes them (it is their child subreaper), and ends all of it when this process dies without
// Close, even by SIGKILL. The helper is this binary re-executed: call HelperMain first thing in
// main (or name another helper binary in Config.Helper).
//
// Ownership: whoever creates a Service closes it, once. The kit's adapters (bash.Executor,
// lsp.Client and lsp.Pool, coderuntime, shell) can be built on a Service the caller owns, so
// one program has one runtime root, one guard and one sandbox policy; an adapter given a
// Service ends only the trees it started, when it is closed, and never closes the Service. An
// adapter given none makes a Service of its own and closes it with itself. A tree's spill
// files can go under the adapter's own directory (Spec.SpillDir).
//
// Service.Close terminates every live tree, waits for it, removes the private runtime root, and
// reports every failure joined. Every error is an *Error that names the operation and wraps one
// of ErrInvalid, ErrNotFound, ErrPermission, ErrLimit, ErrClosed, ErrUnsupported or ErrSystem,
// or the context's error. No method panics on bad input: a zero or nil Handle or Service, a
// terminal method of a Handle without a terminal, or a nil context, gives ErrInvalid, and
// never blocks.
package subprocess
