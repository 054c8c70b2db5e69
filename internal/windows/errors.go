package windows

import (
	"errors"
	"strconv"
	"strings"
)

// Sentinel errors. Every error of this package wraps one of them (test with errors.Is) inside
// an *Error (test with errors.As).
var (
	// ErrUnsupported: the OS call has no implementation on this platform (the package's logic
	// compiles everywhere; its OS calls exist only on Windows).
	ErrUnsupported = errors.New("not supported on this platform")
	// ErrNoProcess: no process has the pid any more (it exited and its last handle closed), or
	// the leader has exited and can no longer be addressed.
	ErrNoProcess = errors.New("no such process")
	// ErrAccessDenied: Windows refused the operation (a protected process, another user's
	// process, or a job that forbids it). taskkill reporting "Access is denied" lands here,
	// whatever its exit code: such a tree is not known to be gone.
	ErrAccessDenied = errors.New("access denied")
	// ErrIdentityChanged: the leader's pid now names another process (its creation time
	// differs from the one recorded at spawn); nothing was killed.
	ErrIdentityChanged = errors.New("pid now names another process")
	// ErrIdentityUnknown: the leader's creation time could not be read, so its pid cannot be
	// fenced; nothing was killed by pid.
	ErrIdentityUnknown = errors.New("process identity cannot be checked")
	// ErrTaskkillMissing: taskkill.exe could not be started (not installed, or not where the
	// Runner looks for it).
	ErrTaskkillMissing = errors.New("taskkill.exe cannot be run")
	// ErrTaskkillFailed: taskkill ran but did not confirm that the tree is gone (an exit code
	// or output it does not recognise, a timeout).
	ErrTaskkillFailed = errors.New("taskkill did not confirm the kill")
	// ErrJobRefused: the leader could not be put in a job object of its own; the tree uses the
	// taskkill route.
	ErrJobRefused = errors.New("job object refused")
)

// Error describes a failed operation on a tree.
type Error struct {
	Op     string // "attach", "resume", "kill", "interrupt", "probe"
	Route  Route  // the route the tree was on, or 0 when none applies
	Pid    int    // the leader's pid
	Err    error  // the cause; wraps one of the sentinels
	Output string // taskkill's output (one line, bounded), when it ran
}

// Error says what failed, on which pid and route, and why, with taskkill's words when it ran.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("windows: ")
	b.WriteString(e.Op)
	b.WriteString(" pid ")
	b.WriteString(strconv.Itoa(e.Pid))
	if e.Route != 0 {
		b.WriteString(" (")
		b.WriteString(e.Route.String())
		b.WriteString(" route)")
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Output != "" {
		b.WriteString(`; taskkill said "`)
		b.WriteString(e.Output)
		b.WriteString(`"`)
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }
