package sandbox

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"unsafe"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The tests of this file attack the sandbox as model-written code would, and assert what the
// attacker gets, not only what the Report says. Each runs for every backend that works here;
// where the Landlock backend (no namespaces) cannot hold a boundary, its Report must say so.

// unenforcedSays reports whether rep admits, in Unenforced, a sentence containing what.
func unenforcedSays(rep Report, what string) bool {
	return strings.Contains(strings.Join(rep.Unenforced, "\n"), what)
}

// Host kernel settings: /proc/sys is read-only inside, for root too.
func TestAdversarySysctl(t *testing.T) {
	swappiness, core := readFile(t, "/proc/sys/vm/swappiness"), readFile(t, "/proc/sys/kernel/core_pattern")
	for _, v := range variants(t) {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t)
			r, _ := v.run(t, Policy{}, w.sh(`echo 61 > /proc/sys/vm/swappiness && echo wrote-swappiness
echo '|/bin/sh -c id' > /proc/sys/kernel/core_pattern && echo wrote-core; echo done`))
			require.Contains(t, r.stdout, "done", "%+v", r)
			require.NotContains(t, r.stdout, "wrote-", "%+v", r)
			require.Equal(t, swappiness, readFile(t, "/proc/sys/vm/swappiness"))
			require.Equal(t, core, readFile(t, "/proc/sys/kernel/core_pattern"))
		})
	}
}

// Metadata outside the writable roots: chmod and utimes fail (EROFS in a mount namespace).
func TestAdversaryMetadata(t *testing.T) {
	for _, v := range variants(t) {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t)
			f := filepath.Join(w.outside, "file")
			before, err := os.Stat(f)
			require.NoError(t, err)
			r, rep := v.run(t, Policy{}, w.sh(`chmod 4755 `+f+` && echo chmod-ok; touch -d 2000-01-01 `+f+` && echo touch-ok; echo done`))
			require.Contains(t, r.stdout, "done", "%+v", r)
			if v.backend == Landlock {
				require.True(t, unenforcedSays(rep, "chmod(2)"), "%q", rep.Unenforced)
				return
			}
			require.NotContains(t, r.stdout, "-ok", "%+v", r)
			after, err := os.Stat(f)
			require.NoError(t, err)
			require.Equal(t, before.Mode(), after.Mode())
			require.Equal(t, before.ModTime(), after.ModTime())
		})
	}
}

// The caller's terminal: a program started by a caller that has a controlling terminal (as
// `subkit exec` typed in a shell has) can neither open /dev/tty nor the caller's pty by name.
func TestAdversaryTerminal(t *testing.T) {
	for _, v := range variants(t) {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t)
			master, tty, err := pty.Open()
			require.NoError(t, err)
			defer master.Close()
			go func() { _, _ = bytes.NewBuffer(nil).ReadFrom(master) }() // drain: nothing must block on it
			prog := w.sh(`if (exec 3<>/dev/tty) 2>/dev/null; then echo got-tty; fi
if (exec 4<>"$USER_PTS") 2>/dev/null; then echo got-pts; fi; echo done`)
			prog.Env = append(prog.Env, "USER_PTS="+tty.Name())
			l := v.prepare(t, Policy{}, prog)
			enc, err := json.Marshal(l)
			require.NoError(t, err)
			// The caller: the test binary, a session leader whose controlling terminal is the pty.
			exe, err := os.Executable()
			require.NoError(t, err)
			var out bytes.Buffer
			cmd := exec.CommandContext(t.Context(), exe)
			cmd.Env = []string{modeVar + "=caller", "LAUNCH=" + string(enc)}
			cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr = w.work, tty, &out, &out
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
			require.NoError(t, cmd.Run(), "%s", out.String())
			require.NoError(t, tty.Close())
			require.Contains(t, out.String(), "done")
			require.NotContains(t, out.String(), "got-", "the program reached the caller's terminal")
		})
	}
}

// callerMode starts the Launch in $LAUNCH as the kit does (its SysProcAttr), with stdout and
// stderr the caller's, and returns its exit status.
func callerMode() error {
	var l Launch
	if err := json.Unmarshal([]byte(os.Getenv("LAUNCH")), &l); err != nil {
		return err
	}
	cmd := exec.Command(l.Path)
	cmd.Args, cmd.Env, cmd.Stdout, cmd.Stderr = l.Args, l.Env, os.Stdout, os.Stderr
	cmd.SysProcAttr = l.SysProcAttr()
	return cmd.Run()
}

// Host Unix sockets: an ssh agent in /tmp (with SSH_AUTH_SOCK set) and a docker-like socket in
// $XDG_RUNTIME_DIR are unreachable; one the Policy allows is reachable.
func TestAdversaryHostSockets(t *testing.T) {
	agentDir, err := os.MkdirTemp("", "ssh-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(agentDir) })
	agentSock := filepath.Join(agentDir, "agent.sock")
	if agent, err := exec.LookPath("ssh-agent"); err == nil {
		cmd := exec.Command(agent, "-D", "-a", agentSock)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		// It prints its SSH_AUTH_SOCK line once the socket listens.
		line, err := bufio.NewReader(out).ReadString('\n')
		require.NoError(t, err)
		require.Contains(t, line, agentSock)
	} else {
		listen(t, agentSock)
	}
	for _, v := range variants(t) {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t)
			xdg := filepath.Join(w.root, "xdg")
			require.NoError(t, os.Mkdir(xdg, 0o700))
			docker, allowed := filepath.Join(xdg, "docker.sock"), filepath.Join(xdg, "allowed.sock")
			// Elsewhere: in the home directory, where no private file system covers it (as
			// colima's docker.sock or a password manager's agent), and reached through a link
			// the program makes in its workspace.
			lima := filepath.Join(w.home, ".lima", "docker.sock")
			require.NoError(t, os.Mkdir(filepath.Dir(lima), 0o755))
			own := filepath.Join(w.work, "own.sock") // the program's own, in its workspace
			for _, s := range []string{docker, allowed, lima, own} {
				listen(t, s)
			}
			prog := w.self(t, "connect", agentSock, docker, allowed, lima, "own.sock", "lima-link.sock", "/proc/self/cwd/own.sock")
			prog.Env = append(prog.Env, "SSH_AUTH_SOCK="+agentSock, "XDG_RUNTIME_DIR="+xdg, "LINK_TO="+lima)
			r, rep := v.run(t, Policy{AllowUnixSockets: []string{allowed}}, prog)
			require.Contains(t, r.stdout, "agent-env=none", "SSH_AUTH_SOCK is not passed: %+v", r)
			require.Contains(t, r.stdout, "connected "+allowed, "the allowed socket: %+v", r)
			require.Contains(t, r.stdout, "connected own.sock\n", "a socket of the workspace, by a relative path: %+v", r)
			require.Contains(t, r.stdout, "connected /proc/self/cwd/own.sock\n", "%+v", r)
			if v.backend == Landlock {
				require.True(t, unenforcedSays(rep, "pathname Unix sockets"), "%q", rep.Unenforced)
				return
			}
			require.Contains(t, r.stdout, "refused "+agentSock, "%+v", r)
			require.Contains(t, r.stdout, "refused "+docker, "%+v", r)
			if v.backend == Bubblewrap {
				require.True(t, unenforcedSays(rep, "a socket elsewhere"), "%q", rep.Unenforced)
				return
			}
			require.Contains(t, r.stdout, "refused "+lima+": dial unix "+lima+": connect: permission denied", "%+v", r)
			require.Contains(t, r.stdout, "refused lima-link.sock", "%+v", r)
		})
	}
}

// listen serves a Unix socket at p until the test ends.
func listen(t *testing.T, p string) {
	t.Helper()
	l, err := net.Listen("unix", p)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(p, 0o777))
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}

// connectMode tries each socket and prints "connected P" or "refused P: ERR", after
// "agent-env=" and what SSH_AUTH_SOCK holds.
func connectMode(paths []string) error {
	agent := os.Getenv("SSH_AUTH_SOCK")
	if agent == "" {
		agent = "none"
	}
	os.Stdout.WriteString("agent-env=" + agent + "\n")
	if to := os.Getenv("LINK_TO"); to != "" {
		if err := os.Symlink(to, "lima-link.sock"); err != nil {
			return err
		}
	}
	for _, p := range paths {
		c, err := net.Dial("unix", p)
		if err != nil {
			os.Stdout.WriteString("refused " + p + ": " + err.Error() + "\n")
			continue
		}
		c.Close()
		os.Stdout.WriteString("connected " + p + "\n")
	}
	return nil
}

// Code planted in the workspace: a git hook, the repository's configuration and an rc file
// written inside cannot be, so that git run afterwards outside runs nothing of the program's.
func TestAdversaryPlantedCode(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git here")
	}
	for _, v := range variants(t) {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t)
			mark := filepath.Join(w.root, "planted-ran")
			out, err := exec.Command(git, "-C", w.work, "init", "-q").CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.NoError(t, os.WriteFile(filepath.Join(w.work, ".envrc"), []byte("export A=1\n"), 0o644))
			r, rep := v.run(t, Policy{}, w.sh(`m=`+mark+`
printf '#!/bin/sh\ntouch %s\n' "$m" > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit && echo hook-planted
git config core.fsmonitor "touch $m" && echo fsmonitor-planted
git config core.hooksPath "$PWD/h" && echo hookspath-planted
echo "touch $m" >> .envrc && echo envrc-planted
echo work > file && git add file && git -c user.name=a -c user.email=a@b commit -qm inside && echo committed-inside`))
			require.Contains(t, r.stdout, "committed-inside", "git commit works inside: %+v", r)
			if v.backend == Landlock {
				require.True(t, unenforcedSays(rep, "protected paths"), "%q", rep.Unenforced)
				return
			}
			require.NotContains(t, r.stdout, "planted", "%+v", r)
			for _, args := range [][]string{{"status"}, {"-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "outside"}} {
				out, err := exec.Command(git, append([]string{"-C", w.work}, args...)...).CombinedOutput()
				require.NoError(t, err, "%s", out)
			}
			require.NoFileExists(t, mark, "code the program planted ran outside")
		})
	}
}

// Inherited descriptors: a file the caller's parent left open (no close-on-exec) does not reach
// the program, neither to read a hidden file through it nor to append outside.
func TestAdversaryInheritedDescriptors(t *testing.T) {
	for _, v := range variants(t) {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t)
			secret, err := os.Open(filepath.Join(w.home, ".netrc"))
			require.NoError(t, err)
			defer secret.Close()
			logPath := filepath.Join(w.outside, "log")
			log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
			require.NoError(t, err)
			defer log.Close()
			l := v.prepare(t, Policy{}, w.sh(`cat <&3; echo appended >&4; echo done`))
			var stdout, stderr bytes.Buffer
			cmd := exec.CommandContext(t.Context(), l.Path)
			cmd.Args, cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = l.Args, l.Env, w.work, &stdout, &stderr
			cmd.ExtraFiles = []*os.File{secret, log}
			cmd.SysProcAttr = l.SysProcAttr()
			require.NoError(t, cmd.Run(), "%s", stderr.String())
			require.Contains(t, stdout.String(), "done")
			require.NotContains(t, stdout.String(), secretMark)
			require.Empty(t, readFile(t, logPath))
		})
	}
}

// /tmp, IPC and /proc: a file in the host's /tmp, the host's SysV shared memory and the host's
// processes are out of sight.
func TestAdversaryPrivateTmpIPCProc(t *testing.T) {
	hostTmp, err := os.CreateTemp("", "subkit-adversary-")
	require.NoError(t, err)
	t.Cleanup(func() { os.Remove(hostTmp.Name()) })
	_, err = hostTmp.WriteString(secretMark)
	require.NoError(t, err)
	require.NoError(t, hostTmp.Close())
	shm := ""
	if out, err := exec.Command("ipcmk", "-M", "4096").Output(); err == nil {
		f := strings.Fields(string(out))
		shm = f[len(f)-1]
		t.Cleanup(func() { exec.Command("ipcrm", "-m", shm).Run() })
	}
	for _, v := range variants(t) {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t)
			script := `cat ` + hostTmp.Name() + ` 2>/dev/null; test -e /proc/` + strconv.Itoa(os.Getpid()) + ` && echo sees-host-proc; `
			if shm != "" {
				script += `ipcs -m | grep -qw ` + shm + ` && echo sees-host-shm; `
			}
			r, rep := v.run(t, Policy{}, w.sh(script+`echo done`))
			require.Contains(t, r.stdout, "done", "%+v", r)
			if v.backend == Landlock {
				require.True(t, unenforcedSays(rep, "/tmp, /dev/shm, SysV IPC"), "%q", rep.Unenforced)
				return
			}
			require.NotContains(t, r.stdout, secretMark, "%+v", r)
			require.NotContains(t, r.stdout, "sees-host", "%+v", r)
		})
	}
}

// A credential store made after the program started is hidden as well.
func TestAdversarySecretMadeLater(t *testing.T) {
	for _, v := range variants(t) {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t)
			fifo := filepath.Join(w.work, "go")
			require.NoError(t, syscall.Mkfifo(fifo, 0o600))
			l := v.prepare(t, Policy{}, w.sh(`echo ready; read x < go; cat ~/.git-credentials; echo done`))
			cmd := exec.CommandContext(t.Context(), l.Path)
			cmd.Args, cmd.Env, cmd.Dir, cmd.SysProcAttr = l.Args, l.Env, w.work, l.SysProcAttr()
			pr, pw, err := os.Pipe()
			require.NoError(t, err)
			cmd.Stdout, cmd.Stderr = pw, pw
			require.NoError(t, cmd.Start())
			pw.Close()
			sc := bufio.NewScanner(pr)
			require.True(t, sc.Scan(), "the program starts")
			require.Equal(t, "ready", sc.Text())
			require.NoError(t, os.WriteFile(filepath.Join(w.home, ".git-credentials"), []byte(secretMark), 0o600))
			f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteString("go\n")
			require.NoError(t, errors.Join(err, f.Close()))
			var rest strings.Builder
			for sc.Scan() {
				rest.WriteString(sc.Text() + "\n")
			}
			require.NoError(t, cmd.Wait())
			require.Contains(t, rest.String(), "done")
			require.NotContains(t, rest.String(), secretMark)
		})
	}
}

// Moving a protected or hidden path away, or re-pointing a link to a hidden file, so that the
// next run (or git run outside) finds the program's own files there: renaming .git and making a
// new one with a hook, renaming the directory of a hidden file, and replacing a hidden link
// with one to another file are all refused; the workspace is as it was.
func TestAdversaryMovedAndRepointed(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git here")
	}
	for _, v := range variants(t) {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t)
			mark := filepath.Join(w.root, "planted-ran")
			out, err := exec.Command(git, "-C", w.work, "init", "-q").CombinedOutput()
			require.NoError(t, err, "%s", out)
			secret := filepath.Join(w.outside, "env")
			require.NoError(t, os.WriteFile(secret, []byte(secretMark), 0o600))
			link := filepath.Join(w.work, "cfg", ".env")
			require.NoError(t, os.MkdirAll(filepath.Dir(link), 0o755))
			require.NoError(t, os.Symlink(secret, link))
			key := filepath.Join(w.work, "keys", "id")
			require.NoError(t, os.MkdirAll(filepath.Dir(key), 0o755))
			require.NoError(t, os.WriteFile(key, []byte(secretMark), 0o600))

			r, rep := v.run(t, Policy{Hidden: []string{link, key}}, w.sh(`m=`+mark+`
cat cfg/.env keys/id 2>/dev/null
mv .git .git-old 2>/dev/null && cp -r .git-old .git && echo git-moved
printf '#!/bin/sh\ntouch %s\n' "$m" > .git/hooks/pre-commit 2>/dev/null && chmod +x .git/hooks/pre-commit && echo hook-planted
ln -sfn /etc/hostname cfg/.env 2>/dev/null && echo link-repointed
mv cfg/.env cfg/.env-old 2>/dev/null && echo link-moved
mv cfg cfg-old 2>/dev/null && echo link-dir-moved
mv keys keys-old 2>/dev/null && echo key-dir-moved
echo new > cfg/new && echo made-beside; echo done`))
			require.Contains(t, r.stdout, "done", "%+v", r)
			require.NotContains(t, r.stdout, secretMark, "%+v", r)
			require.Contains(t, r.stdout, "made-beside", "new entries beside a hidden path can be made: %+v", r)
			if v.backend != Namespaces {
				require.True(t, unenforcedSays(rep, "re-pointed or removed"), "%q", rep.Unenforced)
			} else {
				require.NotContains(t, r.stdout, "link-", "%+v", r)
				target, err := os.Readlink(link)
				require.NoError(t, err)
				require.Equal(t, secret, target, "the hidden link was re-pointed")
			}
			require.NotContains(t, r.stdout, "key-dir-moved", "%+v", r)
			require.FileExists(t, key)
			if v.backend == Landlock {
				require.True(t, unenforcedSays(rep, "protected paths"), "%q", rep.Unenforced)
				return
			}
			require.NotContains(t, r.stdout, "git-moved", "%+v", r)
			require.NotContains(t, r.stdout, "hook-planted", "%+v", r)
			out, err = exec.Command(git, "-C", w.work, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q", "--allow-empty", "-m", "outside").CombinedOutput()
			require.NoError(t, err, "%s", out)
			require.NoFileExists(t, mark, "code the program planted ran outside")
		})
	}
}

// The connect(2) calls the namespaces backend checks for the program answer as the kernel's
// own do: a bad descriptor, a file that is not a socket, an address too long or unreadable, a
// socket reached through an O_PATH descriptor, a non-blocking socket, and many threads at once.
// Every backend prints the same lines.
func TestAdversaryConnectAnswers(t *testing.T) {
	for _, v := range variants(t) {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t)
			listen(t, filepath.Join(w.work, "own.sock"))
			r, _ := v.run(t, Policy{}, w.self(t, "connect-edges", "own.sock"))
			require.Equal(t, 0, r.code, "%+v", r)
			require.Equal(t, "bad-fd: bad file descriptor\nnot-socket: socket operation on non-socket\n"+
				"too-long: invalid argument\nunreadable: bad address\no-path: ok\nnon-blocking: ok\nthreads: 400 ok\n", r.stdout, "%+v", r)
		})
	}
}

// connectEdgesMode makes the calls of TestAdversaryConnectAnswers to the socket at path.
func connectEdgesMode(path string) error {
	addr := func(p string) *unix.RawSockaddrUnix {
		sa := &unix.RawSockaddrUnix{Family: unix.AF_UNIX}
		for i := range len(p) {
			sa.Path[i] = int8(p[i])
		}
		return sa
	}
	raw := func(fd int, p unsafe.Pointer, n uintptr) error {
		if _, _, errno := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(p), n); errno != 0 {
			return errno
		}
		return nil
	}
	say := func(name string, err error) {
		msg := "ok"
		if err != nil {
			msg = err.Error()
		}
		os.Stdout.WriteString(name + ": " + msg + "\n")
	}
	sa := addr(path)
	size := unsafe.Sizeof(*sa)
	say("bad-fd", raw(1000, unsafe.Pointer(sa), size))
	f, err := os.Open("/dev/null")
	if err != nil {
		return err
	}
	defer f.Close()
	say("not-socket", raw(int(f.Fd()), unsafe.Pointer(sa), size))
	sock := func(flags int) (int, error) {
		return unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|flags, 0)
	}
	s, err := sock(0)
	if err != nil {
		return err
	}
	say("too-long", raw(s, unsafe.Pointer(sa), 200))
	if _, _, errno := unix.Syscall(unix.SYS_CONNECT, uintptr(s), 8, size); errno != 0 { // an address nothing is mapped at
		say("unreadable", errno)
	} else {
		say("unreadable", nil)
	}
	unix.Close(s)
	o, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	s, err = sock(0)
	if err != nil {
		return err
	}
	say("o-path", raw(s, unsafe.Pointer(addr("/proc/self/fd/"+strconv.Itoa(o))), size))
	unix.Close(s)
	s, err = sock(unix.SOCK_NONBLOCK)
	if err != nil {
		return err
	}
	say("non-blocking", raw(s, unsafe.Pointer(sa), size))
	unix.Close(s)
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for range 8 {
		wg.Go(func() {
			for range 50 {
				c, err := net.Dial("unix", path)
				if err == nil {
					c.Close()
					mu.Lock()
					ok++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	os.Stdout.WriteString("threads: " + strconv.Itoa(ok) + " ok\n")
	return nil
}
