// Package posix is the Unix backend of the subprocess Service: it puts every spawned tree in a
// process group of its own, signals the group (falling back to the direct child), and tells
// when the group has no member left.
//
// It holds no state of its own beyond one Group per tree; the Service in the parent package is
// the only intended caller.
package posix
