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
// have drained, or when the same grace has run out because a daemon still holds them: a
// background child can never hold a result open forever. WaitForExit waits until no member of
// the tree is left. Once the tree has been seen gone, it is never signalled again, so a reused
// pid or process group id is never hit.
//
// Children start from the host environment minus credential-like names (*KEY*, *SECRET*,
// *TOKEN*, *PASSWORD*, *PASSWD*, *CREDENTIAL*) and the harness's managed prefix; a Spec's Env is
// merged after and wins. Programs are resolved from the scrubbed PATH, never from the current
// directory implicitly.
//
// Service.Close terminates every live tree, waits for it, removes the private runtime root, and
// reports every failure joined. Every error wraps one of ErrInvalid, ErrNotFound, ErrPermission,
// ErrClosed or ErrUnsupported, and an *Error that names the operation.
package subprocess
