package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// Exit statuses of Main when it fails, as shells use them.
const (
	exitSetup    = 126 // confinement could not be applied, or the program could not be executed
	exitNotFound = 127 // the program does not exist
)

// probeOK starts the line the probe's second stage prints.
const probeOK = "subkit-sandbox-probe ok"

// Main is the sandbox role of the kit's helper (subprocess.HelperMain runs it in a process
// started with RoleVar=RoleSandbox): it reads the plan Prepare put in PlanVar, removes both
// variables from the environment, confines this process (Landlock, limits, capabilities,
// NO_NEW_PRIVS, seccomp, as the plan says) and execs the program, which keeps the pid. It
// returns only on failure, with exit status 126 (127 when the program does not exist), after
// one line on stderr starting "subkit sandbox:" that names what failed; it never execs the
// program unconfined.
func Main() int {
	// Never unlocked: the confinement is applied to this thread, the one that execs.
	runtime.LockOSThread()
	pl, err := decodePlan(os.Getenv(PlanVar))
	if err != nil {
		return fail("reading the plan", err)
	}
	if err := errors.Join(os.Unsetenv(RoleVar), os.Unsetenv(PlanVar)); err != nil {
		return fail("clearing the environment", err)
	}
	// No descriptor but stdio reaches the program, whatever the caller's parent left open
	// without close-on-exec.
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err != nil {
		return fail("closing inherited descriptors", err)
	}
	if pl.Stage2 {
		return probeStage2()
	}
	if pl.Route == routeNSInit && pl.Stage == stageInit {
		return runInit(pl)
	}
	if step, err := confine(pl); err != nil {
		return fail(step, err)
	}
	if pl.Probe != nil {
		if err := probeCheck(pl); err != nil {
			return fail("probe", err)
		}
		stage2, err := (&plan{V: planVersion, Stage2: true}).encode()
		if err == nil {
			err = errors.Join(os.Setenv(RoleVar, RoleSandbox), os.Setenv(PlanVar, stage2))
		}
		if err != nil {
			return fail("probe", err)
		}
	}
	if err := os.Chdir(pl.Dir); err != nil {
		return fail("entering the working directory", err)
	}
	if len(os.Args) < 2 {
		return fail("reading the arguments", errors.New("no argv[0] for the program"))
	}
	err = syscall.Exec(pl.Path, os.Args[1:], os.Environ())
	fmt.Fprintf(os.Stderr, "subkit sandbox: exec %s: %v\n", pl.Path, err)
	if errors.Is(err, syscall.ENOENT) {
		return exitNotFound
	}
	return exitSetup
}

func fail(step string, err error) int {
	fmt.Fprintf(os.Stderr, "subkit sandbox: %s: %v\n", step, err)
	return exitSetup
}

// confine applies the plan to the calling thread; on failure it names the step.
func confine(pl *plan) (string, error) {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return "setting no_new_privs", err
	}
	switch pl.Route {
	case routeLandlock, routeNS, routeNSInit, routeBwrap:
		if pl.ABI == 0 && len(pl.Mounts) > 0 {
			break // no Landlock here: the mounts alone hold the file system
		}
		if err := restrictLandlock(pl); err != nil {
			return "applying Landlock", err
		}
	default:
		return "reading the plan", fmt.Errorf("unknown route %q", pl.Route)
	}
	if err := setLimits(pl.Limits); err != nil {
		return "setting limits", err
	}
	if err := dropCapabilities(); err != nil {
		return "dropping capabilities", err
	}
	if pl.Seccomp {
		gate := pl.Gate && pl.Stage == stageConfine
		listener, err := loadSeccomp(pl.NetworkOff, gate)
		if err != nil {
			return "loading the seccomp filter", err
		}
		if gate {
			if err := sendGate(listener); err != nil {
				return "handing connect(2) to the sandbox's init", err
			}
		}
	}
	return "", nil
}

// probeCheck checks from inside the confinement that it holds, for the probe of New.
func probeCheck(pl *plan) error {
	c := pl.Probe
	if err := os.WriteFile(c.Inside, []byte("ok"), 0o600); err != nil {
		return fmt.Errorf("a write inside the writable root failed: %w", err)
	}
	if err := os.WriteFile(c.Outside, []byte("escaped"), 0o600); err == nil {
		return fmt.Errorf("a write outside the writable roots succeeded (%s)", c.Outside)
	}
	if b, err := os.ReadFile(c.Secret); err == nil && bytes.Contains(b, []byte(probeSecret)) {
		return fmt.Errorf("a hidden file was readable (%s)", c.Secret)
	}
	if pl.NetworkOff && pl.Seccomp {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
		if err == nil {
			unix.Close(fd)
			return errors.New("socket(AF_INET) succeeded with the network off")
		}
		if !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("socket(AF_INET) failed with %v, not the filter's EPERM", err)
		}
	}
	if c.HostNet != "" {
		ns, err := os.Readlink("/proc/self/ns/net")
		if err != nil {
			return fmt.Errorf("reading the network namespace: %w", err)
		}
		if ns == c.HostNet {
			return errors.New("still in the host's network namespace")
		}
	}
	return nil
}

// probeSecret is the content of the probe's hidden file.
const probeSecret = "subkit-sandbox-probe-secret"

// probeStage2 is the program the probe execs under confinement: it prints probeOK and what it
// was left with.
func probeStage2() int {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return fail("probe: reading /proc/self/status", err)
	}
	defer f.Close()
	out := []string{probeOK}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		switch k {
		case "CapEff", "CapPrm", "NoNewPrivs", "Seccomp":
			out = append(out, k+"="+strings.TrimSpace(v))
		}
	}
	if err := sc.Err(); err != nil {
		return fail("probe: reading /proc/self/status", err)
	}
	fmt.Println(strings.Join(out, " "))
	return 0
}
