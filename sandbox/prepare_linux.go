package sandbox

import (
	"fmt"
	"os"
	"slices"
	"strings"
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
	return s.launch(info, r, nil)
}

// pick returns the backend b names, or the first that works when b is "".
func (s *Sandbox) pick(b Backend) (backendInfo, error) {
	switch b {
	case "":
		return s.found[0], nil
	case Landlock, Bubblewrap:
		for _, i := range s.found {
			if i.backend == b {
				return i, nil
			}
		}
		return backendInfo{}, &Error{Op: "prepare", Name: "Policy.Backend", Kind: ErrUnsupported,
			Err: fmt.Errorf("%s does not work here: %s", b, s.missing[b])}
	}
	return backendInfo{}, invalid("prepare", "Policy.Backend", "unknown backend %q (use %q or %q, or \"\" for the first that works)", b, Landlock, Bubblewrap)
}

// launch builds the Launch of r under backend info; probe adds the probe's checks to the plan.
func (s *Sandbox) launch(info backendInfo, r *resolved, probe *probeChecks) (*Launch, error) {
	pl := &plan{V: planVersion, Path: r.prog.Path, Dir: r.prog.Dir, NetworkOff: r.networkOff,
		Seccomp: info.seccomp, Limits: r.limits, Probe: probe}
	rep := Report{Backend: info.backend, Writable: slices.Clone(r.writable), Network: "on"}
	for _, h := range r.hidden {
		rep.Hidden = append(rep.Hidden, h.Path)
	}
	var argv []string
	switch info.backend {
	case Landlock:
		pl.ABI, pl.Writable, pl.Hidden = info.abi, r.writable, r.hidden
		pl.Route = routeLandlock
		argv = []string{s.helper}
		if !info.seccomp {
			pl.Route = routeNS
			if r.networkOff {
				argv = []string{info.unshare, "--user", "--map-current-user", "--net", "--", s.helper}
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
		pl.Route = routeBwrap
		argv = append(bwrapArgs(info.bwrap, r), "--", s.helper)
		if r.networkOff {
			rep.Network = "off by seccomp and namespace"
			if !info.seccomp {
				rep.Network = "off by namespace"
			}
		}
	default:
		return nil, invalid("prepare", "Policy.Backend", "unknown backend %q", info.backend)
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
	env := make([]string, 0, len(r.prog.Env)+3)
	for _, e := range r.prog.Env {
		k, _, _ := strings.Cut(e, "=")
		if k != RoleVar && k != PlanVar && (k != "TMPDIR" || r.prog.TempDir == "") {
			env = append(env, e)
		}
	}
	if r.prog.TempDir != "" {
		env = append(env, "TMPDIR="+r.prog.TempDir)
	}
	env = append(env, RoleVar+"="+RoleSandbox, planEnv)
	return &Launch{Path: argv[0], Args: argv, Env: env, Report: rep}, nil
}

// limitsOf says what backend info cannot enforce of r here (Report.Unenforced), and what the
// program may notice beyond the policy (Report.Notes).
func limitsOf(info backendInfo, r *resolved) (unenforced, notes []string) {
	if !info.seccomp {
		unenforced = append(unenforced, "no seccomp filter could be loaded: new namespaces (unshare, clone), keyrings, bpf, io_uring, ptrace of processes inside the sandbox and TIOCSTI are not refused")
	}
	if r.limits.Processes != 0 && os.Geteuid() == 0 {
		unenforced = append(unenforced, "Limits.Processes: the kernel does not apply RLIMIT_NPROC to uid 0, and this process runs as root")
	}
	if info.capsKept {
		unenforced = append(unenforced, "capabilities: the program keeps those of the bounding set, which cannot be emptied without CAP_SETPCAP")
	}
	switch info.backend {
	case Landlock:
		if info.abi < 9 {
			unenforced = append(unenforced, fmt.Sprintf("connect(2) to pathname Unix sockets outside the writable roots (an ssh-agent's $SSH_AUTH_SOCK, /var/run/docker.sock) is not refused: Landlock ABI %d, 9 needed", info.abi))
		}
		if info.abi < 6 {
			unenforced = append(unenforced, fmt.Sprintf("signals to processes outside the sandbox and abstract Unix sockets are not refused: Landlock ABI %d, 6 needed", info.abi))
		}
		if info.abi < 3 {
			unenforced = append(unenforced, fmt.Sprintf("truncate(2) of files outside the writable roots is not refused: Landlock ABI %d, 3 needed", info.abi))
		}
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
		notes = append(notes, "/dev: only null, zero, full, random, urandom, tty, ptmx and the ptys under /dev/pts can be opened (not /dev/shm, unless writable)")
		if r.networkOff && !info.seccomp {
			notes = append(notes, "the network namespace has no interface up: 127.0.0.1 is unreachable too")
			what := "binding an MPTCP socket (Go's default for Listen) is not refused (Landlock's TCP rules cover plain TCP only)"
			if info.abi < 4 {
				what = fmt.Sprintf("binding sockets is not refused (Landlock ABI %d, 4 needed for TCP)", info.abi)
			}
			unenforced = append(unenforced, what+"; it binds in the program's own network namespace, which nothing outside reaches")
		}
		unenforced = append(unenforced, "chmod(2), utimes(2) and user extended attributes of files outside the writable roots are not refused when their owner runs the program (Landlock has no right for metadata); as root that includes system files")
	case Bubblewrap:
		unenforced = append(unenforced, "connect(2) to pathname Unix sockets outside the writable roots (an ssh-agent's $SSH_AUTH_SOCK, /var/run/docker.sock) is not refused: read-only mounts do not cover it")
		notes = append(notes,
			"the program is a child of bwrap, which reports a program killed by signal N as exit status 128+N",
			"hidden directories are empty and unreadable, hidden files empty; /proc shows only the sandbox's processes; /dev is bwrap's minimal one, with a pts instance of its own",
		)
	}
	return unenforced, notes
}

func parentDir(p string) string {
	i := strings.LastIndexByte(p, '/')
	if i <= 0 {
		return "/"
	}
	return p[:i]
}
