package shell

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/internal/inspect/linux"
	"github.com/subkit/subkit/procinspect"
	"github.com/subkit/subkit/subprocess"
)

// How a program waits for terminal input, as Linux shows it:
//
//   - /proc/PID/syscall: the system call a sleeping process is blocked in, with its
//     arguments: read(fd, ...), select/pselect6(nfds, readfds, ...), poll/ppoll(fds, nfds, ...)
//     or epoll_wait/epoll_pwait(epfd, ...). The descriptors it waits on come from its
//     arguments, from its memory (/proc/PID/mem: the fd_set or the pollfd array) or from the
//     epoll descriptor's fdinfo, and one of them must be the terminal (its device, or
//     /dev/tty). Reading these needs ptrace access to the process (the session's own
//     descendants qualify unless a security module says otherwise).
//   - /proc/PID/wchan when the syscall cannot be read: the kernel function the process
//     sleeps in (n_tty_read, wait_woken, do_select, ...). Weaker evidence: the session waits
//     longer before believing it.
//   - the terminal's modes (ICANON, ECHO), from a duplicate of the reader's terminal
//     descriptor (pidfd_getfd: no path is opened).
//
// A process counts as blocked on input only while asleep ('S'); any member running or in
// disk sleep means the group is busy. The probe's signature (each member's syscall line and
// context-switch counts) tells whether anything ran between two probes.

// devTTY is /dev/tty's device number: a descriptor opened on it reads the controlling terminal.
var devTTY = unix.Mkdev(5, 0)

func inspectInput(fg subprocess.Foreground) (probe, error) {
	var p probe
	var sig strings.Builder
	found := false
	for _, m := range fg.Procs {
		st, err := linux.ReadStat(m.Pid)
		if err != nil || st.StartTime != m.Start || st.Zombie() {
			continue // gone meanwhile
		}
		if st.State != 'S' {
			return probe{}, nil // running, in disk sleep or stopped: not waiting for input
		}
		line, err := os.ReadFile(fmt.Sprintf("/proc/%d/syscall", m.Pid))
		line = bytes.TrimSpace(line)
		fmt.Fprintf(&sig, "%d:%s:%s;", m.Pid, line, ctxSwitches(m.Pid))
		if err != nil || len(line) == 0 {
			if found || !waitsInWchan(m.Pid, m.Tty) {
				continue
			}
			found, p.weak = true, true
			p.wait = InputWait{Pid: m.Pid, Comm: m.Comm}
			p.wait.ModesKnown, p.wait.LineMode, p.wait.EchoOff = termModes(m.Identity, m.Tty, -1)
			continue
		}
		if bytes.Equal(line, []byte("running")) {
			return probe{}, nil
		}
		fd := waitedTerminalFd(m.Pid, m.Tty, line)
		if fd < 0 {
			continue
		}
		if !found || p.weak {
			found, p.weak = true, false
			p.wait = InputWait{Pid: m.Pid, Comm: m.Comm}
			p.wait.ModesKnown, p.wait.LineMode, p.wait.EchoOff = termModes(m.Identity, m.Tty, fd)
		}
	}
	p.blocked = found
	p.sig = sig.String()
	return p, nil
}

// ctxSwitches is the process's voluntary and involuntary context switch counts.
func ctxSwitches(pid int) string {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return ""
	}
	defer f.Close()
	var out []byte
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if f := bytes.Fields(sc.Bytes()); len(f) >= 2 && bytes.HasSuffix(f[0], []byte("ctxt_switches:")) {
			out = append(append(out, f[1]...), '/')
		}
	}
	return string(out)
}

// isTerminal reports whether the process's descriptor fd is the terminal tty (or /dev/tty).
func isTerminal(pid, fd int, tty uint64) bool {
	var st unix.Stat_t
	if err := unix.Stat(fmt.Sprintf("/proc/%d/fd/%d", pid, fd), &st); err != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && (st.Rdev == tty || st.Rdev == devTTY)
}

// waitedTerminalFd parses a /proc/PID/syscall line and returns the terminal descriptor the
// blocked call waits to read from, or -1.
func waitedTerminalFd(pid int, tty uint64, line []byte) int {
	f := strings.Fields(string(line))
	if len(f) < 4 || tty == 0 {
		return -1
	}
	nr, err := strconv.ParseInt(f[0], 10, 64)
	if err != nil {
		return -1
	}
	arg := func(i int) uint64 {
		v, err := strconv.ParseUint(strings.TrimPrefix(f[1+i], "0x"), 16, 64)
		if err != nil {
			return 1<<64 - 1
		}
		return v
	}
	var fds []int
	switch kind := syscallKind(nr); kind {
	case callRead:
		fds = []int{int(int32(arg(0)))}
	case callSelect:
		fds = selectFds(pid, arg(0), arg(1))
	case callPoll:
		fds = pollFds(pid, arg(0), arg(1))
	case callEpoll:
		fds = epollFds(pid, int(int32(arg(0))))
	default:
		return -1
	}
	for _, fd := range fds {
		if fd >= 0 && isTerminal(pid, fd, tty) {
			return fd
		}
	}
	return -1
}

type callKind int

const (
	callOther callKind = iota
	callRead
	callSelect
	callPoll
	callEpoll
)

func syscallKind(nr int64) callKind {
	switch nr {
	case unix.SYS_READ, unix.SYS_READV, unix.SYS_PREAD64:
		return callRead
	case unix.SYS_PSELECT6:
		return callSelect
	case unix.SYS_PPOLL:
		return callPoll
	case unix.SYS_EPOLL_PWAIT, unix.SYS_EPOLL_PWAIT2:
		return callEpoll
	}
	return legacyKind(nr)
}

// maxWatchedFds bounds what is read of a select or poll set.
const maxWatchedFds = 1024

// readMem reads n bytes at addr of the process's memory.
func readMem(pid int, addr uint64, n int) []byte {
	if addr == 0 || n <= 0 {
		return nil
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/mem", pid))
	if err != nil {
		return nil
	}
	defer f.Close()
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, int64(addr)); err != nil {
		return nil
	}
	return buf
}

// selectFds is the read set of select(nfds, readfds, ...): an array of longs, bit i of the
// set is bit i%W of long i/W.
func selectFds(pid int, nfds, addr uint64) []int {
	if nfds == 0 || nfds > maxWatchedFds {
		return nil
	}
	const w = bits.UintSize // a long is as wide as a uint on Linux
	words := (int(nfds) + w - 1) / w
	buf := readMem(pid, addr, words*w/8)
	var fds []int
	for i := 0; i < words && (i+1)*w/8 <= len(buf); i++ {
		var v uint64
		if w == 64 {
			v = binary.NativeEndian.Uint64(buf[i*8:])
		} else {
			v = uint64(binary.NativeEndian.Uint32(buf[i*4:]))
		}
		for b := 0; b < w; b++ {
			if v&(1<<b) != 0 && i*w+b < int(nfds) {
				fds = append(fds, i*w+b)
			}
		}
	}
	return fds
}

// pollFds is the descriptors of poll(fds, nfds, ...) that wait for reading: struct pollfd
// is {int fd; short events; short revents}.
func pollFds(pid int, addr, nfds uint64) []int {
	if nfds == 0 || nfds > maxWatchedFds {
		return nil
	}
	buf := readMem(pid, addr, int(nfds)*8)
	var fds []int
	for i := 0; i+8 <= len(buf); i += 8 {
		fd := int32(binary.NativeEndian.Uint32(buf[i:]))
		events := binary.NativeEndian.Uint16(buf[i+4:])
		if events&(unix.POLLIN|unix.POLLPRI|0x040 /* POLLRDNORM */) != 0 {
			fds = append(fds, int(fd))
		}
	}
	return fds
}

// epollFds is the descriptors an epoll instance watches for reading, from its fdinfo
// ("tfd: FD events: HEX data: ...").
func epollFds(pid, epfd int) []int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%d", pid, epfd))
	if err != nil {
		return nil
	}
	var fds []int
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 4 || f[0] != "tfd:" || f[2] != "events:" {
			continue
		}
		fd, err1 := strconv.Atoi(f[1])
		ev, err2 := strconv.ParseUint(f[3], 16, 32)
		if err1 == nil && err2 == nil && ev&(unix.EPOLLIN|unix.EPOLLPRI) != 0 {
			fds = append(fds, fd)
		}
		if len(fds) >= maxWatchedFds {
			break
		}
	}
	return fds
}

// waitsInWchan is the weak evidence: the process sleeps where a terminal read or a wait on
// descriptors sleeps, and its standard input is the terminal.
func waitsInWchan(pid int, tty uint64) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/wchan", pid))
	if err != nil {
		return false
	}
	switch w := string(bytes.TrimSpace(b)); {
	case w == "n_tty_read", w == "wait_woken", w == "do_select", w == "do_sys_poll", w == "ep_poll",
		w == "do_epoll_wait", strings.HasPrefix(w, "poll_schedule_timeout"):
	default:
		return false
	}
	return isTerminal(pid, 0, tty)
}

// termModes reads the terminal's ICANON and ECHO through a duplicate of the process's
// terminal descriptor fd (or of 0, 1, 2 when fd is -1 or /dev/tty, which a duplicate would
// not resolve any differently, but a descriptor on the pty itself is preferred).
func termModes(id procinspect.Identity, tty uint64, fd int) (known, canon, echoOff bool) {
	pidfd, err := unix.PidfdOpen(id.Pid, 0)
	if err != nil {
		return false, false, false
	}
	defer unix.Close(pidfd)
	// The pidfd is the process that had the pid when it was opened: the one of this identity
	// if it still has that start.
	if st, err := linux.ReadStat(id.Pid); err != nil || st.StartTime != id.Start {
		return false, false, false
	}
	for _, cand := range []int{fd, 0, 1, 2} {
		if cand < 0 {
			continue
		}
		dup, err := unix.PidfdGetfd(pidfd, cand, 0)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		ok := unix.Fstat(dup, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFCHR && (st.Rdev == tty || st.Rdev == devTTY)
		var t *unix.Termios
		if ok {
			t, err = unix.IoctlGetTermios(dup, unix.TCGETS)
			ok = err == nil
		}
		unix.Close(dup)
		if ok {
			canon = t.Lflag&unix.ICANON != 0
			return true, canon, canon && t.Lflag&unix.ECHO == 0
		}
	}
	return false, false, false
}
