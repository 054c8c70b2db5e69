package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The structures of seccomp user notification (<linux/seccomp.h>), which x/sys does not define.
type seccompData struct {
	Nr   int32
	Arch uint32
	IP   uint64
	Args [6]uint64
}

type seccompNotif struct {
	ID    uint64
	Pid   uint32
	Flags uint32
	Data  seccompData
}

type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// maxSockaddr is sizeof(struct sockaddr_storage): connect(2) refuses a longer address.
const maxSockaddr = 128

// connectGate answers the connect(2) calls of a confined program, which its seccomp filter
// hands to the sandbox's init (SECCOMP_RET_USER_NOTIF) when the network is off. Read-only
// mounts do not stop connect(2), and the private /tmp, /run and $XDG_RUNTIME_DIR cover only
// where sockets usually live: the gate refuses (EACCES) a pathname socket anywhere but beneath
// roots (the writable roots and the private /tmp, /var/tmp and /dev/shm) or among sockets (the
// Policy's AllowUnixSockets).
//
// The gate never lets the call go on in the program (SECCOMP_USER_NOTIF_FLAG_CONTINUE): the
// program's other threads could change the address between the check and the kernel's own
// read of it. It connects the program's socket itself instead: it copies the address once,
// opens the socket file it names (relative to the program's working directory) as an O_PATH
// descriptor, checks where that file really is, takes the program's socket with pidfd_getfd
// and connects it to /proc/self/fd/N, that very file. Every address but a pathname (abstract,
// unnamed) is connected as given: with the network off the program has a network namespace of
// its own, whose abstract sockets are its own.
type connectGate struct {
	listener int
	roots    []string
	sockets  []string
	uid, gid int
}

// serve answers notifications until the listener fails (it does not while the init lives),
// and then closes it, so that the kernel fails the program's later calls (ENOSYS) rather than
// leave them waiting for an answer.
func (g *connectGate) serve() {
	defer unix.Close(g.listener)
	for {
		var n seccompNotif // the kernel wants it zeroed
		if err := ioctlPtr(g.listener, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&n)); err != nil {
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOENT) {
				continue // ENOENT: the caller was gone before it could be received
			}
			return
		}
		go g.answer(n) // a blocking connect waits in its own goroutine
	}
}

// answer connects for notification n and sends the result back; a caller interrupted by a
// signal in the meantime (ENOENT) restarts its call or sees EINTR, as for any slow call.
func (g *connectGate) answer(n seccompNotif) {
	resp := seccompNotifResp{ID: n.ID}
	if errno := g.connect(n); errno != 0 {
		resp.Error = -int32(errno)
	}
	// It fails only when the caller is gone or no longer waits (ENOENT): nothing to tell.
	_ = ioctlPtr(g.listener, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp))
}

// connect does connect(fd, addr, len) of notification n for the program, or returns why not.
func (g *connectGate) connect(n seccompNotif) unix.Errno {
	fd, ptr, size := int(int32(n.Data.Args[0])), n.Data.Args[1], int64(int32(n.Data.Args[2]))
	if size < 0 || size > maxSockaddr {
		return unix.EINVAL
	}
	addr := make([]byte, size)
	if size > 0 {
		mem, err := unix.Open("/proc/"+strconv.Itoa(int(n.Pid))+"/mem", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return unix.EPERM // the program made itself unreadable: nothing is connected for it
		}
		got, err := unix.Pread(mem, addr, int64(ptr))
		unix.Close(mem)
		if err != nil || got != len(addr) {
			return unix.EFAULT
		}
	}
	// The pid still names the caller: it did not end (and its pid go to another) while read.
	if err := ioctlPtr(g.listener, unix.SECCOMP_IOCTL_NOTIF_ID_VALID, unsafe.Pointer(&n.ID)); err != nil {
		return unix.ENOENT
	}
	sock, err := g.socketOf(int(n.Pid), fd)
	if err != nil {
		return errnoOf(err)
	}
	defer unix.Close(sock)
	if len(addr) > 2 && int(*(*uint16)(unsafe.Pointer(&addr[0]))) == unix.AF_UNIX && addr[2] != 0 {
		path := string(addr[2:])
		if i := strings.IndexByte(path, 0); i >= 0 {
			path = path[:i]
		}
		file, err := g.openSocket(int(n.Pid), path)
		if err != nil {
			return errnoOf(err)
		}
		defer unix.Close(file)
		return errnoOf(connectRaw(sock, unixAddr("/proc/self/fd/"+strconv.Itoa(file))))
	}
	return errnoOf(connectRaw(sock, addr))
}

// socketOf is a descriptor of the program's socket fd, taken from thread tid (whose process
// may not be its thread group's leader).
func (g *connectGate) socketOf(tid, fd int) (int, error) {
	pidfd, err := unix.PidfdOpen(tid, unix.PIDFD_THREAD)
	if errors.Is(err, unix.EINVAL) { // before Linux 6.9: a thread group's leader only
		var tgid int
		if tgid, err = threadGroup(tid); err == nil {
			pidfd, err = unix.PidfdOpen(tgid, 0)
		}
	}
	if err != nil {
		return -1, unix.EPERM
	}
	defer unix.Close(pidfd)
	sock, err := unix.PidfdGetfd(pidfd, fd, 0)
	if err != nil {
		return -1, err // EBADF, as connect(2) would say
	}
	var st unix.Stat_t
	if err := unix.Fstat(sock, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFSOCK {
		unix.Close(sock)
		return -1, unix.ENOTSOCK
	}
	return sock, nil
}

// openSocket opens the socket file path names for the program (a relative one in its working
// directory) as an O_PATH descriptor, if the program may connect to it.
func (g *connectGate) openSocket(tid int, path string) (int, error) {
	// /proc/self and /proc/thread-self would name the init: name the program's.
	for _, self := range []string{"/proc/self", "/proc/thread-self"} {
		if rest, ok := strings.CutPrefix(path, self); ok && (rest == "" || rest[0] == '/') {
			tgid, err := threadGroup(tid)
			if err != nil {
				return -1, unix.EPERM
			}
			own := "/proc/" + strconv.Itoa(tgid)
			if self == "/proc/thread-self" {
				own += "/task/" + strconv.Itoa(tid)
			}
			path = own + rest
		}
	}
	dir := "/proc/" + strconv.Itoa(tid) + "/cwd"
	if filepath.IsAbs(path) {
		dir = "/proc/" + strconv.Itoa(tid) + "/root"
	}
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, unix.EPERM
	}
	defer unix.Close(dfd)
	file, err := unix.Openat(dfd, path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err // ENOENT, ENOTDIR, ELOOP, EACCES: as connect(2) would say
	}
	real, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(file))
	var st unix.Stat_t
	if err == nil {
		err = unix.Fstat(file, &st)
	}
	switch {
	case err != nil:
		err = unix.EACCES
	case st.Mode&unix.S_IFMT != unix.S_IFSOCK:
		err = unix.ECONNREFUSED // what connect(2) says of a file that is not a socket
	case !beneathAny(real, g.roots) && !slices.Contains(g.sockets, real):
		err = unix.EACCES
	case !g.mayWrite(&st):
		err = unix.EACCES
	}
	if err != nil {
		unix.Close(file)
		return -1, err
	}
	return file, nil
}

// mayWrite checks the write permission connect(2) needs on the socket file, for the program,
// which has this process's uid and gid and no capability (the init keeps some).
func (g *connectGate) mayWrite(st *unix.Stat_t) bool {
	switch {
	case int(st.Uid) == g.uid:
		return st.Mode&0o200 != 0
	case int(st.Gid) == g.gid:
		return st.Mode&0o020 != 0
	}
	return st.Mode&0o002 != 0
}

func threadGroup(tid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Tgid:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, fmt.Errorf("no Tgid in /proc/%d/status", tid)
}

// unixAddr is a struct sockaddr_un of path, as connect(2) takes it.
func unixAddr(path string) []byte {
	b := make([]byte, 2+len(path)+1)
	*(*uint16)(unsafe.Pointer(&b[0])) = unix.AF_UNIX
	copy(b[2:], path)
	return b
}

func connectRaw(fd int, addr []byte) error {
	var p unsafe.Pointer
	if len(addr) > 0 {
		p = unsafe.Pointer(&addr[0])
	}
	if _, _, errno := unix.Syscall(unix.SYS_CONNECT, uintptr(fd), uintptr(p), uintptr(len(addr))); errno != 0 {
		return errno
	}
	return nil
}

func ioctlPtr(fd int, req uint, arg unsafe.Pointer) error {
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg)); errno != 0 {
		return errno
	}
	return nil
}

// errnoOf is the errno err carries, or EACCES.
func errnoOf(err error) unix.Errno {
	if err == nil {
		return 0
	}
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return unix.EACCES
}

// gateFD is the descriptor, in the confining helper, of the socket it sends its seccomp
// listener on to the init (the first of the init's ExtraFiles).
const gateFD = 3

// gatePair is the socket pair between the init (the first) and the confining helper.
func gatePair() (int, *os.File, error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return -1, nil, fmt.Errorf("socketpair: %w", err)
	}
	return fds[0], os.NewFile(uintptr(fds[1]), "gate"), nil
}

// sendGate sends the seccomp listener to the init over gateFD and closes both, so that the
// program inherits neither.
func sendGate(listener int) error {
	err := unix.Sendmsg(gateFD, []byte{0}, unix.UnixRights(listener), nil, 0)
	return errors.Join(err, unix.Close(listener), unix.Close(gateFD))
}

// serveGate receives the listener from the confining helper over conn and serves the program's
// connect(2) calls for the life of the init. A helper that failed before sending it ends the
// run anyway: nothing is served.
func serveGate(conn int, pl *plan) {
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(conn, make([]byte, 1), oob, unix.MSG_CMSG_CLOEXEC)
	if err != nil {
		return
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		return
	}
	roots := append(slices.Clip(pl.Writable), privateWritable(pl.Mounts)...)
	g := &connectGate{listener: fds[0], roots: roots, sockets: pl.Sockets, uid: os.Getuid(), gid: os.Getgid()}
	g.serve()
}
