package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// runInit is the helper as the init of the namespaces the process was started in: it builds
// the program's view of the file system, starts the helper again (stageConfine), which
// confines itself and execs the program, in a new session (or, with a terminal, as its
// foreground process group), passes the forwarded signals on to every process of the
// namespace, reaps whatever is re-parented to it, and exits with the program's status (128+N
// when signal N ended it) as soon as the program has ended. Its exit ends the pid namespace:
// the kernel kills what the program left behind, so nothing outlives the run.
func runInit(pl *plan) int {
	if err := checkNamespaces(); err != nil {
		return fail("checking the namespaces", err)
	}
	proxy := -1 // the allow-list proxy's socket, opened while the host's view still shows it
	if pl.Proxy != "" {
		var err error
		if proxy, err = unix.Open(pl.Proxy, unix.O_PATH|unix.O_CLOEXEC, 0); err != nil {
			return fail("opening the network allow-list's proxy", err)
		}
	}
	if err := buildMounts(pl.Mounts, pl.PidMax); err != nil {
		return fail("building the mounts", err)
	}
	if proxy >= 0 {
		if err := serveProxy(proxy); err != nil {
			return fail("serving the network allow-list's proxy", err)
		}
	}
	next := *pl
	next.Stage = stageConfine
	enc, err := next.encode()
	if err != nil {
		return fail("starting the program", err)
	}
	cmd := &exec.Cmd{Path: "/proc/self/exe", Args: os.Args, Env: append(os.Environ(), RoleVar+"="+RoleSandbox, PlanVar+"="+enc),
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if pl.Terminal {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Foreground: true, Ctty: 0}
	}
	gate := -1 // the init's end of the socket the confining helper sends its listener on; kept to the end
	if pl.Gate {
		var child *os.File
		if gate, child, err = gatePair(); err != nil {
			return fail("starting the program", err)
		}
		defer child.Close()
		cmd.ExtraFiles = []*os.File{child} // gateFD
	}
	// Besides SIGCHLD, the signals passed on to every process of the namespace: those the kit
	// and a terminal send to end or interrupt a tree. (A pid namespace's init gets no signal
	// it has no handler for, so the program, which is never the init, gets them from it.)
	sigs := make(chan os.Signal, 64)
	signal.Notify(sigs, unix.SIGCHLD, unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2, unix.SIGALRM)
	if err := cmd.Start(); err != nil {
		return fail("starting the program", err)
	}
	child := cmd.Process.Pid
	if gate >= 0 {
		cmd.ExtraFiles[0].Close()
		go serveGate(gate, pl)
	}
	for sig := range sigs {
		if sig != unix.SIGCHLD {
			_ = unix.Kill(-1, sig.(syscall.Signal)) // ESRCH: nothing left to pass it to
			continue
		}
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || pid <= 0 {
				break
			}
			if pid == child {
				if ws.Signaled() {
					return 128 + int(ws.Signal())
				}
				return ws.ExitStatus()
			}
		}
	}
	return exitSetup // not reached: the channel is never closed
}

// checkNamespaces refuses to build mounts anywhere but in the new namespaces of a Launch: a
// helper started without them (Cloneflags not applied) would change the host's own mounts.
func checkNamespaces() error {
	if os.Getpid() != 1 {
		return errors.New("the helper is not the init of a new pid namespace: start the Launch with its Cloneflags (Launch.SysProcAttr or SetNamespaces)")
	}
	m, err := os.ReadFile("/proc/self/uid_map")
	if err != nil {
		return err
	}
	if f := strings.Fields(string(m)); len(f) == 3 && f[0] == "0" && f[1] == "0" && f[2] == "4294967295" {
		return errors.New("the helper runs in the host's user namespace: start the Launch with its Cloneflags (Launch.SysProcAttr or SetNamespaces)")
	}
	return nil
}

// SysProcAttr returns the attributes to start l with: a new session unless the program has a
// terminal of its own (its caller then sets Setsid and Setctty itself), and the namespaces
// of Cloneflags. A caller that needs its own attributes (Credential, Pdeathsig) sets them on
// the result; one that cannot take a SysProcAttr (a process started by another process) passes
// Setsid and Cloneflags on and applies them with SetNamespaces.
func (l *Launch) SysProcAttr() *syscall.SysProcAttr {
	a := &syscall.SysProcAttr{Setsid: l.Setsid, Setpgid: !l.Setsid}
	SetNamespaces(a, l.Cloneflags)
	return a
}

// SetNamespaces sets on a what starting a Launch whose Cloneflags are cloneflags needs: the
// new namespaces, this process's uid and gid mapped to themselves in the new user namespace
// (no other user exists there), and, for a uid other than 0, the capabilities the helper needs
// there to build the program's view, to check the program's connect(2) calls (CAP_SYS_PTRACE
// in that namespace, where Yama asks for it) and to bring up the loopback of its network
// namespace (CAP_NET_ADMIN); it drops every capability before the program
// starts.
// It does nothing when cloneflags is 0.
func SetNamespaces(a *syscall.SysProcAttr, cloneflags uintptr) {
	if cloneflags == 0 {
		return
	}
	uid, gid := os.Getuid(), os.Getgid()
	a.Cloneflags |= cloneflags
	a.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
	a.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
	a.GidMappingsEnableSetgroups = false
	if uid != 0 {
		a.AmbientCaps = []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP, unix.CAP_DAC_OVERRIDE, unix.CAP_SYS_PTRACE, unix.CAP_NET_ADMIN}
	}
}
