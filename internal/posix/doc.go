// Package posix is the Unix backend of the subprocess Service: it puts every spawned tree in a
// process group of its own, learns of the leader's exit from a pidfd (a kqueue on macOS) in the
// runtime poller without reaping it, keeps the leader unreaped while its group has a live member
// (so the group number cannot be reused and the group signal is always safe), tells when the
// group has no live member left, and then reaps the leader. Processes that left the group carry
// an environment cookie by which Linux finds them; they are signalled by exact identity.
//
// It holds no state of its own beyond one Tree per tree; the Service in the parent package is
// the only intended caller.
package posix
