package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// New probes which backends can confine a program here, by really confining the helper with
// each (bounded by DefaultProbeTimeout), and returns the result. helper is the absolute path
// of the kit's helper executable: a binary that calls subprocess.HelperMain first thing in
// main (the subkit CLI does), or one that runs sandbox.Main when RoleVar is RoleSandbox. When
// no backend works New fails with ErrUnsupported, saying what each one lacks.
func New(helper string) (*Sandbox, error) {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultProbeTimeout)
	defer cancel()
	return NewContext(ctx, helper)
}

// NewContext is New bounded by ctx instead of DefaultProbeTimeout.
func NewContext(ctx context.Context, helper string) (*Sandbox, error) {
	return newSandbox(ctx, helper, probeOptions{})
}

// probeOptions change what the probe finds, for tests: each makes a backend, or a part of
// one, unavailable.
type probeOptions struct {
	landlockABI  func() (int, error) // nil: the kernel's
	noSeccomp    bool                // as if no seccomp filter could be loaded
	noNamespaces bool                // as if the namespaces backend did not work
	bwrap        string              // bwrap to try; "": the one on PATH
	unshare      string              // unshare(1) to use; "": the one on PATH
}

func newSandbox(ctx context.Context, helper string, opts probeOptions) (_ *Sandbox, err error) {
	if ctx == nil {
		return nil, invalid("new", "ctx", "nil context")
	}
	if err := checkHelper(helper); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "subkit-sandbox-probe-")
	if err != nil {
		return nil, &Error{Op: "new", Name: "probe", Kind: ErrSystem, Err: err}
	}
	defer func() {
		if rerr := os.RemoveAll(dir); rerr != nil && err == nil {
			err = &Error{Op: "new", Name: "probe", Kind: ErrSystem, Err: fmt.Errorf("removing the probe's directory: %w", rerr)}
		}
	}()
	s := &Sandbox{helper: helper, missing: map[Backend]string{}}
	pr := &prober{s: s, dir: dir}
	if err := pr.layout(); err != nil {
		return nil, err
	}

	abiOf := opts.landlockABI
	if abiOf == nil {
		abiOf = landlockABI
	}
	abi, abiErr := abiOf()
	if abiErr != nil {
		abi = 0
	}
	abi = min(abi, maxABI) // a newer kernel is used as the newest ABI the sandbox knows, and reported so

	if opts.noNamespaces {
		s.missing[Namespaces] = "not tried"
	} else if err := pr.try(ctx, backendInfo{backend: Namespaces, abi: abi, pidMax: kernelAtLeast(6, 14), gate: ptraceAllowed()}, !opts.noSeccomp); err != nil {
		return nil, err
	}

	switch {
	case abiErr != nil:
		s.missing[Landlock] = fmt.Sprintf("reading the Landlock ABI: %v", abiErr)
	case abi < 1:
		s.missing[Landlock] = "Landlock is not enabled in this kernel (it needs Linux 5.13 or later with landlock in the lsm= boot parameter)"
	default:
		unshare := opts.unshare
		if unshare == "" {
			unshare, _ = exec.LookPath("unshare") // not found: "" and the namespace route is out
		}
		if err := pr.try(ctx, backendInfo{backend: Landlock, abi: abi, unshare: unshare}, !opts.noSeccomp); err != nil {
			return nil, err
		}
	}

	bwrap := opts.bwrap
	if bwrap == "" {
		bwrap, _ = exec.LookPath("bwrap")
	}
	if bwrap == "" {
		s.missing[Bubblewrap] = "bwrap is not installed (Debian: apt-get install bubblewrap)"
	} else if err := pr.try(ctx, backendInfo{backend: Bubblewrap, abi: abi, bwrap: bwrap}, !opts.noSeccomp); err != nil {
		return nil, err
	}

	if len(s.found) == 0 {
		var why []string
		for _, b := range []Backend{Namespaces, Landlock, Bubblewrap} {
			why = append(why, string(b)+": "+s.missing[b])
		}
		return nil, &Error{Op: "new", Kind: ErrUnsupported, Err: errors.New("no backend can confine a program here: " + strings.Join(why, "; ")),
			Hint: "allow unprivileged user namespaces (a container may refuse them), or enable Landlock (Linux 5.13+, lsm=landlock)"}
	}
	return s, nil
}

func checkHelper(helper string) error {
	if helper == "" || !filepath.IsAbs(helper) {
		return invalid("new", "helper", "%q is not an absolute path (pass the kit's helper binary, such as os.Executable() of a binary that calls subprocess.HelperMain)", helper)
	}
	fi, err := os.Stat(helper)
	if err != nil {
		kind := ErrInvalid
		if errors.Is(err, fs.ErrNotExist) {
			kind = ErrNotFound
		}
		return &Error{Op: "new", Name: "helper", Kind: kind, Err: err}
	}
	if !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		return invalid("new", "helper", "%s is not an executable file", helper)
	}
	return nil
}

// prober runs the probes of one New in its directory: w is writable (and the working
// directory), t the temp dir, h a hidden directory holding a secret, x a path outside.
type prober struct {
	s   *Sandbox
	dir string
}

func (pr *prober) layout() error {
	for _, d := range []string{"w", "t", "h"} {
		if err := os.Mkdir(filepath.Join(pr.dir, d), 0o700); err != nil {
			return &Error{Op: "new", Name: "probe", Kind: ErrSystem, Err: err}
		}
	}
	if err := os.WriteFile(filepath.Join(pr.dir, "h", "s"), []byte(probeSecret), 0o600); err != nil {
		return &Error{Op: "new", Name: "probe", Kind: ErrSystem, Err: err}
	}
	return nil
}

// try probes info, first with the seccomp filter when withSeccomp, then without it when the
// filter is what failed. A backend that fails is recorded in missing; only the end of ctx is
// returned as an error.
func (pr *prober) try(ctx context.Context, info backendInfo, withSeccomp bool) error {
	var fails []string
	for _, sec := range []bool{true, false} {
		if sec && !withSeccomp {
			continue
		}
		info.seccomp = sec
		if !sec && info.backend == Landlock && info.unshare == "" {
			fails = append(fails, "without seccomp the network needs unshare(1) (util-linux), which is not on PATH")
			break
		}
		got, err := pr.run(ctx, info)
		if ctxErr := ctx.Err(); ctxErr != nil {
			return &Error{Op: "new", Name: "probe " + string(info.backend), Err: ctxErr}
		}
		if err == nil {
			pr.s.found = append(pr.s.found, got)
			return nil
		}
		fails = append(fails, err.Error())
		if !strings.Contains(err.Error(), "seccomp") {
			break // the filter is not what failed: without it the backend fails the same way
		}
	}
	pr.s.missing[info.backend] = strings.Join(fails, "; then without seccomp: ")
	return nil
}

// run confines the helper under info, lets it check from inside that the confinement holds
// and exec itself, and reads what its second stage was left with.
func (pr *prober) run(ctx context.Context, info backendInfo) (backendInfo, error) {
	tag := string(info.backend)
	if !info.seccomp {
		tag += "-noseccomp"
	}
	w := filepath.Join(pr.dir, "w")
	r := &resolved{
		prog:       Program{Path: pr.s.helper, Args: []string{pr.s.helper}, Dir: w, TempDir: filepath.Join(pr.dir, "t")},
		writable:   []string{w, filepath.Join(pr.dir, "t")},
		hidden:     []pathEntry{{Path: filepath.Join(pr.dir, "h"), Dir: true}},
		networkOff: true,
	}
	// Outside is on the host's / itself: neither a writable root nor beneath a private file
	// system of the namespaces, so a write there that worked would be seen here.
	checks := &probeChecks{Inside: filepath.Join(w, "inside-"+tag), Outside: "/" + filepath.Base(pr.dir) + "-outside-" + tag, Secret: filepath.Join(pr.dir, "h", "s")}
	if !info.seccomp || info.backend != Landlock {
		ns, err := os.Readlink("/proc/self/ns/net")
		if err != nil {
			return info, fmt.Errorf("reading this process's network namespace: %w", err)
		}
		checks.HostNet = ns
	}
	l, err := pr.s.launch(info, r, checks)
	if err != nil {
		return info, err
	}
	var stdout, stderr capped
	cmd := exec.CommandContext(ctx, l.Path)
	cmd.Args, cmd.Env, cmd.Dir = l.Args, l.Env, w
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = l.SysProcAttr()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	runErr := cmd.Run()
	if _, err := os.Lstat(checks.Outside); !errors.Is(err, fs.ErrNotExist) {
		return info, errors.Join(fmt.Errorf("the probe wrote outside its writable roots (%s)", checks.Outside), os.Remove(checks.Outside))
	}
	if runErr != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:] // the helper's line comes last
		}
		if msg == "" {
			return info, runErr
		}
		return info, fmt.Errorf("%s (%v)", msg, runErr)
	}
	line := strings.TrimSpace(stdout.String())
	if !strings.HasPrefix(line, probeOK) {
		return info, fmt.Errorf("the helper did not act as the sandbox helper (is %s calling subprocess.HelperMain first in main?); it printed %q", pr.s.helper, line)
	}
	fields := map[string]string{}
	for _, f := range strings.Fields(line[len(probeOK):]) {
		k, v, _ := strings.Cut(f, "=")
		fields[k] = v
	}
	if fields["NoNewPrivs"] != "1" {
		return info, fmt.Errorf("the program runs without no_new_privs (%q)", line)
	}
	if info.seccomp && fields["Seccomp"] != "2" {
		return info, fmt.Errorf("the program runs without the seccomp filter (%q)", line)
	}
	info.capsKept = strings.Trim(fields["CapEff"], "0") != "" || strings.Trim(fields["CapPrm"], "0") != ""
	return info, nil
}

// capped keeps the first 64 KiB written to it.
type capped struct{ bytes.Buffer }

func (c *capped) Write(p []byte) (int, error) {
	if room := 64<<10 - c.Len(); room > 0 {
		c.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// kernelAtLeast reports whether the running kernel's release is major.minor or later.
// ptraceAllowed reports whether Yama lets a process with CAP_SYS_PTRACE read another's memory
// and take its descriptors, as the connectGate does: every kernel.yama.ptrace_scope but 3.
func ptraceAllowed() bool {
	b, err := os.ReadFile("/proc/sys/kernel/yama/ptrace_scope")
	return err != nil || strings.TrimSpace(string(b)) != "3"
}

func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var ma, mi int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}
