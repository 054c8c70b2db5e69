package sandbox

import (
	"slices"
	"time"
)

// The helper's role: a process started with RoleVar=RoleSandbox and the plan in PlanVar is the
// sandbox hop. subprocess.HelperMain dispatches it to Main.
const (
	RoleVar     = "SUBKIT_HELPER"
	RoleSandbox = "sandbox"
	// PlanVar carries the plan (JSON) from Prepare to Main. Main removes it and RoleVar from
	// the environment before it execs the program.
	PlanVar = "SUBKIT_SANDBOX_PLAN"
)

// DefaultProbeTimeout bounds the probe of New (NewContext takes the caller's context instead).
const DefaultProbeTimeout = 30 * time.Second

// Program is what the caller would start without a sandbox.
type Program struct {
	// Path is the program to run: absolute (resolve it through PATH first).
	Path string
	// Args are its arguments, Args[0] being argv[0]; at least one.
	Args []string
	// Env is its whole environment (NAME=VALUE). Prepare adds TMPDIR=TempDir.
	Env []string
	// Dir is its working directory: absolute, existing. Relative Policy paths are taken
	// against it.
	Dir string
	// TempDir is the private temp dir the caller made for this program: when set it is
	// always writable and becomes TMPDIR. It may be empty only when Policy.Writable is not
	// nil.
	TempDir string
	// Home is the home directory "~/" expands to in Policy paths; it may be empty only when
	// no Policy path starts with "~".
	Home string
	// Terminal says the program's stdin is a terminal made for it (a pty whose session it
	// leads), which it keeps as its controlling terminal. Otherwise the program runs in a new
	// session with no controlling terminal: it can neither take the caller's terminal's
	// foreground nor read what the user types there.
	Terminal bool
	// Readable lists files and directories the program must read although a private file
	// system of the backend covers their place (/tmp, /run): the caller's own files for it,
	// such as a script it wrote. They are shown read-only at their paths; hidden paths stay
	// hidden. Those that do not exist are skipped.
	Readable []string
	// Proxy is the Unix socket where the allow-list proxy serves this program, outside the
	// sandbox (Policy.Network NetworkAllowList, which needs it; see internal/netproxy, which
	// subprocess runs). The sandbox's init opens it before it builds the program's view.
	Proxy string
}

// Launch is what to start instead of the Program: after the helper's exec (and bwrap's, or
// unshare's) the process is the program, confined. Each argument of the Program stays its own
// argument here (none is packed into one string, which Linux caps at 128 KiB).
type Launch struct {
	Path string   // absolute path of what to start (the helper, unshare or bwrap)
	Args []string // its arguments, Args[0] being argv[0]
	Env  []string // its environment: the Program's, TMPDIR, and the helper's role and plan
	// Cloneflags, when not zero, are the namespaces (CLONE_NEW*) Path must start in: set them
	// with SetNamespaces on the attributes that start it.
	Cloneflags uintptr
	// Setsid says the caller must start Path in a new session (SysProcAttr.Setsid): true unless
	// Program.Terminal, whose caller makes the session itself.
	Setsid bool
	Report Report // how the program will be confined
}

// Sandbox is this machine's probed ability to confine programs: made once by New and
// immutable, so safe for concurrent use.
type Sandbox struct {
	helper  string
	found   []backendInfo      // the working backends, in the order tried
	missing map[Backend]string // why a backend does not work here
}

// backendInfo is what the probe learnt of one working backend.
type backendInfo struct {
	backend  Backend
	abi      int    // Landlock ABI (Landlock backend)
	seccomp  bool   // the seccomp filter loads
	unshare  string // util-linux unshare, for the network namespace hop (Landlock without seccomp)
	bwrap    string // bwrap's path (Bubblewrap backend)
	pidMax   bool   // kernel.pid_max can be set in a new pid namespace (Linux 6.14)
	capsKept bool   // the program keeps capabilities (no CAP_SETPCAP to drop the bounding set)
	gate     bool   // the init can read the program's memory and take its descriptors (connectGate)
}

// Backends returns the working backends, in the order Prepare tries them for a Policy with
// no Backend.
func (s *Sandbox) Backends() []Backend {
	if s == nil {
		return nil
	}
	out := make([]Backend, 0, len(s.found))
	for _, b := range s.found {
		out = append(out, b.backend)
	}
	return out
}

// Unavailable returns nil when backend b works here, or an error wrapping ErrUnsupported that
// says why it does not.
func (s *Sandbox) Unavailable(b Backend) error {
	if s != nil && slices.ContainsFunc(s.found, func(i backendInfo) bool { return i.backend == b }) {
		return nil
	}
	why := "unknown backend"
	if s != nil {
		if w, ok := s.missing[b]; ok {
			why = w
		}
	}
	return &Error{Op: "backend", Name: string(b), Kind: ErrUnsupported, Err: errorString(why)}
}

type errorString string

func (e errorString) Error() string { return string(e) }
