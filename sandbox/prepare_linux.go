package sandbox

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Prepare resolves p for one program and returns what to start instead: the helper, behind
// unshare(1) or bwrap(1) when the backend needs them. It checks p and prog (ErrInvalid,
// ErrNotFound), picks the backend (Policy.Backend, or the first that works; ErrUnsupported
// when the one asked for does not work here) and never returns a Launch that would run the
// program unconfined. It starts nothing.
func (s *Sandbox) Prepare(p *Policy, prog Program) (*Launch, error) {
	if s == nil || s.helper == "" || len(s.found) == 0 {
		return nil, invalid("prepare", "Sandbox", "not made by New")
	}
	if p == nil {
		return nil, invalid("prepare", "Policy", "nil policy (use &sandbox.Policy{} for the defaults)")
	}
	info, err := s.pick(p.Backend)
	if err != nil {
		return nil, err
	}
	r, err := resolve(p, prog)
	if err != nil {
		return nil, err
	}
	if r.allowList && info.backend != Namespaces {
		return nil, &Error{Op: "prepare", Name: "Policy.Network", Kind: ErrUnsupported,
			Err: fmt.Errorf("the network allow-list needs the namespaces backend, and the policy gets %s (namespaces: %s)", info.backend, cmp.Or(s.missing[Namespaces], "works here, but Policy.Backend asks for another"))}
	}
	return s.launch(info, r, nil)
}

// pick returns the backend b names, or the first that works when b is "".
func (s *Sandbox) pick(b Backend) (backendInfo, error) {
	switch b {
	case "":
		return s.found[0], nil
	case Namespaces, Landlock, Bubblewrap:
		for _, i := range s.found {
			if i.backend == b {
				return i, nil
			}
		}
		return backendInfo{}, &Error{Op: "prepare", Name: "Policy.Backend", Kind: ErrUnsupported,
			Err: fmt.Errorf("%s does not work here: %s", b, s.missing[b])}
	}
	return backendInfo{}, invalid("prepare", "Policy.Backend", "unknown backend %q (use %q, %q or %q, or \"\" for the first that works)", b, Namespaces, Landlock, Bubblewrap)
}

// launch builds the Launch of r under backend info; probe adds the probe's checks to the plan.
func (s *Sandbox) launch(info backendInfo, r *resolved, probe *probeChecks) (*Launch, error) {
	pl := &plan{V: planVersion, Path: r.prog.Path, Dir: r.prog.Dir, NetworkOff: r.networkOff,
		Seccomp: info.seccomp, Limits: r.limits, Terminal: r.prog.Terminal, Probe: probe}
	rep := Report{Backend: info.backend, Writable: slices.Clone(r.writable), Network: "on"}
	for _, h := range r.hidden {
		rep.Hidden = append(rep.Hidden, h.Path)
	}
	var argv []string
	var cloneflags uintptr
	switch info.backend {
	case Namespaces:
		pl.Route, pl.ABI, pl.Writable, pl.Mounts, pl.Absent = routeNSInit, info.abi, r.writable, mountPlan(r), r.absent
		pl.Gate, pl.Sockets = (r.networkOff || r.allowList) && info.seccomp && info.gate, r.sockets
		pl.Proxy = r.proxy
		if r.limits.Processes != 0 && info.pidMax {
			// Processes and threads of the namespace, the init included: pids 1 to PidMax-1.
			pl.PidMax = int(max(r.limits.Processes+2, minPidMax))
		}
		argv = []string{s.helper}
		cloneflags = unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWIPC
		if r.networkOff || r.allowList {
			cloneflags |= unix.CLONE_NEWNET
		}
	case Landlock:
		pl.ABI, pl.Writable, pl.Hidden = info.abi, r.writable, r.hidden
		pl.Route = routeLandlock
		argv = []string{s.helper}
		if !info.seccomp {
			pl.Route = routeNS
			if r.networkOff {
				argv = []string{info.unshare, "--user", "--map-current-user", "--net", "--", s.helper}
				rep.Namespaces = []string{"user", "net"}
			}
		}
		rep.SamePid = true
		if r.networkOff {
			rep.Network = "off by seccomp"
			if !info.seccomp {
				rep.Network = "off by namespace"
			}
		}
	case Bubblewrap:
		pl.Route, pl.ABI, pl.Writable, pl.Mounts, pl.Absent = routeBwrap, info.abi, r.writable, mountPlan(r, s.helper), r.absent
		argv = append(bwrapArgs(info.bwrap, r, pl.Mounts), "--", s.helper)
	default:
		return nil, invalid("prepare", "Policy.Backend", "unknown backend %q", info.backend)
	}
	if len(pl.Mounts) > 0 { // the namespaced backends: Namespaces, Bubblewrap
		rep.Namespaces = []string{"user", "mount", "pid", "ipc"}
		if r.allowList {
			rep.Namespaces = append(rep.Namespaces, "net")
			rep.Network, rep.Allow, rep.Deny = "allow-list through the proxy", r.allow, r.deny
		}
		if r.networkOff {
			rep.Namespaces = append(rep.Namespaces, "net")
			rep.Network = "off by seccomp and namespace"
			if !info.seccomp {
				rep.Network = "off by namespace"
			}
		}
	}
	argv = append(argv, r.prog.Args...)
	rep.Unenforced, rep.Notes = limitsOf(info, r)

	enc, err := pl.encode()
	if err != nil {
		return nil, &Error{Op: "prepare", Kind: ErrSystem, Err: err}
	}
	planEnv := PlanVar + "=" + enc
	if len(planEnv) >= maxArgLen {
		return nil, invalid("prepare", "Policy", "the plan takes %d bytes, more than the %d of one environment string: fewer or shorter paths", len(planEnv), maxArgLen-1)
	}
	env := append(programEnv(r), RoleVar+"="+RoleSandbox, planEnv)
	return &Launch{Path: argv[0], Args: argv, Env: env, Cloneflags: cloneflags, Setsid: !r.prog.Terminal, Report: rep}, nil
}

// minPidMax is the lowest kernel.pid_max Linux takes (RESERVED_PIDS + 1).
const minPidMax = 301

// programEnv is the program's environment: the Program's less the helper's variables and an
// agent socket the program may not reach, TMPDIR, and the caches of build and package tools
// in the program's own writable place (TempDir/.cache) unless they already name a writable
// one, so that go build, go test, pip and npm work with a read-only home.
func programEnv(r *resolved) []string {
	agent := envValue(r.prog.Env, "SSH_AUTH_SOCK")
	if real, err := filepath.EvalSymlinks(agent); err == nil && slices.Contains(r.sockets, real) {
		agent = "" // allowed: passed on
	}
	env := make([]string, 0, len(r.prog.Env)+8)
	for _, e := range r.prog.Env {
		k, _, _ := strings.Cut(e, "=")
		if k != RoleVar && k != PlanVar && (k != "TMPDIR" || r.prog.TempDir == "") && (k != "SSH_AUTH_SOCK" || agent == "") {
			env = append(env, e)
		}
	}
	if r.allowList {
		// Ordinary clients find the proxy through these; the sandbox's own loopback is direct.
		proxy := fmt.Sprintf("http://127.0.0.1:%d", ProxyPort)
		for _, kv := range [][2]string{{"HTTP_PROXY", proxy}, {"HTTPS_PROXY", proxy},
			{"ALL_PROXY", fmt.Sprintf("socks5h://127.0.0.1:%d", ProxyPort)}, {"NO_PROXY", "localhost,127.0.0.1,::1"}} {
			env = setEnv(env, kv[0], kv[1])
			env = setEnv(env, strings.ToLower(kv[0]), kv[1])
		}
		env = setEnv(env, "npm_config_proxy", proxy)
		env = setEnv(env, "npm_config_https_proxy", proxy)
	}
	if r.prog.TempDir == "" {
		return env
	}
	env = append(env, "TMPDIR="+r.prog.TempDir)
	cache := filepath.Join(r.prog.TempDir, ".cache")
	for _, c := range []struct{ name, dir string }{
		{"XDG_CACHE_HOME", cache}, {"GOCACHE", filepath.Join(cache, "go-build")},
		{"npm_config_cache", filepath.Join(cache, "npm")}, {"PIP_CACHE_DIR", filepath.Join(cache, "pip")},
	} {
		if v := envValue(env, c.name); !filepath.IsAbs(v) || !r.inWritable(v) {
			env = append(env, c.name+"="+c.dir)
		}
	}
	return env
}

// setEnv sets name to value in env, replacing any earlier value.
func setEnv(env []string, name, value string) []string {
	env = slices.DeleteFunc(env, func(e string) bool { return strings.HasPrefix(e, name+"=") })
	return append(env, name+"="+value)
}

// limitsOf says what backend info cannot enforce of r here (Report.Unenforced), and what the
// program may notice beyond the policy (Report.Notes).
func limitsOf(info backendInfo, r *resolved) (unenforced, notes []string) {
	if !info.seccomp {
		unenforced = append(unenforced, "no seccomp filter could be loaded: new namespaces (unshare, clone), keyrings, bpf, io_uring, ptrace of processes inside the sandbox and TIOCSTI are not refused")
	}
	if info.capsKept {
		unenforced = append(unenforced, "capabilities: the program keeps those of the bounding set, which cannot be emptied without CAP_SETPCAP")
	}
	if info.backend != Landlock && info.abi < 1 {
		unenforced = append(unenforced, "Landlock is missing here: the mounts alone keep the file system read-only and hidden paths hidden")
	}
	root := os.Geteuid() == 0
	if p := r.limits.Processes; p != 0 && root {
		switch {
		case info.backend != Namespaces || !info.pidMax:
			unenforced = append(unenforced, "Limits.Processes: the kernel does not apply RLIMIT_NPROC to uid 0, and this process runs as root (the namespaces backend on Linux 6.14 or later holds it through the pid namespace)")
		case p+2 < minPidMax:
			unenforced = append(unenforced, fmt.Sprintf("Limits.Processes %d: as root it is held by the pid namespace, whose smallest pid_max lets %d processes and threads run", p, minPidMax-2))
		}
	}
	switch info.backend {
	case Namespaces, Bubblewrap:
		notes = append(notes, "/tmp, /var/tmp, /run and $XDG_RUNTIME_DIR are private and start empty; /proc shows only the sandbox's processes and is read-only; /dev has null, zero, full, random, urandom, tty, a pty instance of its own and a private shm")
		if info.backend == Bubblewrap {
			notes = append(notes, "the program is a child of bwrap, which reports a program killed by signal N as exit status 128+N")
		} else {
			notes = append(notes, "the program is a child of the sandbox's init, which reports a program killed by signal N as exit status 128+N")
		}
		if info.backend == Namespaces && (r.networkOff || r.allowList) && info.seccomp && info.gate {
			unenforced = append(unenforced, "a datagram sent with an address (sendto(2), sendmsg(2)) to a pathname Unix datagram socket outside the writable roots is not checked; connect(2) is")
		} else {
			unenforced = append(unenforced, "connect(2) to a pathname Unix socket outside the writable roots is refused only where a private /tmp, /run or $XDG_RUNTIME_DIR or a hidden path covers it; a socket elsewhere (in the home directory, say) is reachable unless hidden (the namespaces backend with the network off checks every connect, unless kernel.yama.ptrace_scope is 3)")
		}
		if len(r.hidden) > 0 {
			notes = append(notes, "hidden directories are empty and unreadable, hidden files empty")
		}
		if pins := pinnedPaths(r, info.backend); len(pins) > 0 {
			notes = append(notes, "these entries of the writable roots lead to hidden or protected paths and are mount points for the run: they cannot be renamed or removed (EBUSY), and a rename between one and the rest of its root fails with EXDEV (mv copies instead): "+strings.Join(pins, ", "))
		}
	case Landlock:
		unenforced = append(unenforced, landlockUnenforced(info, r)...)
		notes = append(notes, landlockNotes(info, r)...)
	}
	if links := pinnedLinks(r); len(links) > 0 && info.backend != Namespaces {
		unenforced = append(unenforced, "these links on the way to hidden or protected paths lie in writable roots and can be re-pointed or removed, so that a later run hides or protects another file (only the namespaces backend binds a link onto itself): "+strings.Join(links, ", "))
	}
	if r.networkOff && !info.seccomp && info.backend != Namespaces {
		notes = append(notes, "the network namespace has no interface up: 127.0.0.1 is unreachable too")
	}
	return unenforced, notes
}

// landlockUnenforced is what the Landlock backend, without namespaces, leaves open.
func landlockUnenforced(info backendInfo, r *resolved) []string {
	var out []string
	if info.abi < 9 {
		out = append(out, fmt.Sprintf("connect(2) to pathname Unix sockets outside the writable roots (an ssh-agent's socket, /var/run/docker.sock) is not refused: Landlock ABI %d, 9 needed, and no mount namespace here", info.abi))
	}
	if info.abi < 6 {
		out = append(out, fmt.Sprintf("signals to processes outside the sandbox and abstract Unix sockets are not refused: Landlock ABI %d, 6 needed", info.abi))
	}
	if info.abi < 3 {
		out = append(out, fmt.Sprintf("truncate(2) of files outside the writable roots is not refused: Landlock ABI %d, 3 needed", info.abi))
	}
	out = append(out,
		"chmod(2), utimes(2) and extended attributes of files outside the writable roots are not refused when their owner runs the program (Landlock has no right for metadata); as root that includes system files",
		"/tmp, /dev/shm, SysV IPC and POSIX message queues are the host's, and /proc shows every process of the host",
	)
	if len(r.protected) > 0 {
		out = append(out, "protected paths stay writable (Landlock cannot take part of a writable root back): "+strings.Join(protectedPaths(r), ", "))
	}
	if r.networkOff && !info.seccomp {
		what := "binding an MPTCP socket (Go's default for Listen) is not refused (Landlock's TCP rules cover plain TCP only)"
		if info.abi < 4 {
			what = fmt.Sprintf("binding sockets is not refused (Landlock ABI %d, 4 needed for TCP)", info.abi)
		}
		out = append(out, what+"; it binds in the program's own network namespace, which nothing outside reaches")
	}
	return out
}

// pinnedLinks are the links of r.pinned; pinnedPaths those that backend b pins (bwrap cannot
// bind a link itself).
func pinnedLinks(r *resolved) []string {
	var out []string
	for _, p := range r.pinned {
		if p.Link {
			out = append(out, p.Path)
		}
	}
	return out
}

func pinnedPaths(r *resolved, b Backend) []string {
	var out []string
	for _, p := range r.pinned {
		if !p.Link || b == Namespaces {
			out = append(out, p.Path)
		}
	}
	return out
}

func protectedPaths(r *resolved) []string {
	var out []string
	for _, p := range r.protected {
		out = append(out, p.Path)
	}
	return out
}

// landlockNotes is what a program confined by Landlock alone may notice.
func landlockNotes(info backendInfo, r *resolved) []string {
	var notes []string
	if info.abi < 2 {
		notes = append(notes, "rename and link between directories are refused everywhere: Landlock ABI 1")
	}
	var unlisted []string
	for _, h := range r.hidden {
		if !h.Dir {
			continue
		}
		for a := parentDir(h.Path); ; a = parentDir(a) {
			if !slices.Contains(unlisted, a) {
				unlisted = append(unlisted, a)
			}
			if a == "/" {
				break
			}
		}
	}
	if len(unlisted) > 0 {
		slices.Sort(unlisted)
		notes = append(notes, "these directories hold hidden directories and cannot be listed (their other entries can be used by name; entries made after the start cannot be read): "+strings.Join(unlisted, ", "))
	}
	for _, w := range r.writable {
		var in []string
		for _, h := range r.hidden {
			if within(h.Path, w) {
				in = append(in, h.Path)
			}
		}
		if len(in) > 0 {
			notes = append(notes, fmt.Sprintf("writable root %s holds hidden paths (%s): its existing entries are writable, but no entry can be made or removed directly in it, nor in the directories between it and a hidden path", w, strings.Join(in, ", ")))
		}
	}
	return append(notes, "/dev: only null, zero, full, random, urandom, tty, ptmx and the program's own terminal can be opened (not /dev/shm, unless writable)")
}

func parentDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}
