//go:build linux

package linux

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ProcRoot is where procfs is mounted.
const ProcRoot = "/proc"

// statBufSize is the initial read buffer: a stat line is about 300 bytes, and
// under 1 KiB even with a 64-byte comm and every counter at its widest. The
// buffer grows if a line ever does not fit.
const statBufSize = 1024

// IsNotExist reports whether err means the process does not exist (any
// more): the /proc entry is missing (ENOENT), the process exited while its
// file was read (ESRCH), or the read came back empty.
func IsNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// ReadStat reads and parses /proc/<pid>/stat. A missing process gives an
// *fs.PathError for which IsNotExist reports true.
func ReadStat(pid int) (Stat, error) {
	if pid <= 0 {
		return Stat{}, &fs.PathError{Op: "open", Path: statPath(pid), Err: syscall.ENOENT}
	}
	r := reader{buf: make([]byte, statBufSize), path: make([]byte, 0, 32)}
	return r.readStat(unix.AT_FDCWD, ProcRoot+"/", pid)
}

// ReadAll lists /proc once and reads each process's stat file once. Processes
// that exit during the scan (ENOENT, ESRCH, an empty read) are skipped, and so
// are processes whose /proc entry this caller may not read (EACCES, EPERM:
// procfs mounted with hidepid). Entries come in the order procfs lists them,
// which is ascending pid.
//
// It reuses one read buffer and one path buffer for the whole scan and calls
// open/read/close directly, so the only allocations per process are the Comm
// string and the growth of the result slice.
func ReadAll() ([]Stat, error) { return ReadSome(nil) }

// ReadSome is ReadAll reading the stat files only of the pids keep accepts (all
// of them when keep is nil): listing /proc is cheap, reading a stat file is
// what a scan spends its time on.
func ReadSome(keep func(pid int) bool) ([]Stat, error) {
	dirfd, err := unix.Open(ProcRoot, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: ProcRoot, Err: err}
	}
	defer unix.Close(dirfd)

	r := reader{buf: make([]byte, statBufSize), path: make([]byte, 0, 32)}
	dents := make([]byte, 16<<10)
	out := make([]Stat, 0, 256)
	for {
		n, err := unix.Getdents(dirfd, dents)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "readdirent", Path: ProcRoot, Err: err}
		}
		if n <= 0 {
			return out, nil
		}
		for b := dents[:n]; len(b) > 0; {
			pid, reclen := direntPid(b)
			if reclen <= 0 || reclen > len(b) {
				return nil, &fs.PathError{Op: "readdirent", Path: ProcRoot, Err: errors.New("corrupt directory entry")}
			}
			b = b[reclen:]
			if pid <= 0 || keep != nil && !keep(pid) {
				continue
			}
			st, err := r.readStat(dirfd, "", pid)
			if err != nil {
				if IsNotExist(err) || errors.Is(err, fs.ErrPermission) {
					continue
				}
				return nil, err
			}
			out = append(out, st)
		}
	}
}

// Layout of struct linux_dirent64, identical on every Linux architecture:
// d_ino u64, d_off s64, d_reclen u16, d_type u8, d_name NUL-terminated.
const (
	direntReclenOff = 16
	direntNameOff   = 19
)

// direntPid decodes one linux_dirent64 record at the start of b and returns
// the pid its name spells (0 when the name is not all digits) and the record
// length.
func direntPid(b []byte) (pid, reclen int) {
	if len(b) < direntNameOff {
		return 0, -1
	}
	reclen = int(binary.NativeEndian.Uint16(b[direntReclenOff:]))
	if reclen < direntNameOff || reclen > len(b) {
		return 0, -1
	}
	name := b[direntNameOff:reclen]
	if len(name) == 0 || name[0] == 0 {
		return 0, reclen
	}
	for _, c := range name {
		if c == 0 {
			break
		}
		if c < '0' || c > '9' {
			return 0, reclen
		}
		pid = pid*10 + int(c-'0')
		if pid > 1<<30 { // above any pid_max (4194304)
			return 0, reclen
		}
	}
	return pid, reclen
}

// reader holds the buffers reused across stat reads.
type reader struct {
	buf  []byte // file contents
	path []byte // NUL-terminated path handed to openat
}

// readStat opens prefix+"<pid>/stat" relative to dirfd, reads it to the end,
// and parses it.
func (r *reader) readStat(dirfd int, prefix string, pid int) (Stat, error) {
	b, err := r.statBytes(dirfd, prefix, pid)
	if err != nil {
		return Stat{}, err
	}
	st, err := ParseStat(b)
	if err != nil {
		return Stat{}, &fs.PathError{Op: "parse", Path: statPath(pid), Err: err}
	}
	if st.Pid != pid {
		return Stat{}, &fs.PathError{Op: "parse", Path: statPath(pid), Err: errors.New("stat names pid " + strconv.Itoa(st.Pid))}
	}
	return st, nil
}

// statBytes reads prefix+"<pid>/stat" relative to dirfd into r.buf and returns its bytes.
func (r *reader) statBytes(dirfd int, prefix string, pid int) ([]byte, error) {
	r.path = append(r.path[:0], prefix...)
	r.path = strconv.AppendInt(r.path, int64(pid), 10)
	r.path = append(r.path, "/stat\x00"...)

	fd, err := openat(dirfd, r.path)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: statPath(pid), Err: err}
	}
	n, err := r.readAll(fd)
	unix.Close(fd)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: statPath(pid), Err: err}
	}
	if n == 0 {
		// The process was reaped between open and read.
		return nil, &fs.PathError{Op: "read", Path: statPath(pid), Err: syscall.ESRCH}
	}
	return r.buf[:n], nil
}

// readAll reads the stat file fd into r.buf, growing it when full.
//
// The stat file is a single-record seq_file: the kernel formats the whole
// line once and a read hands out as much of it as fits. So a read that
// leaves room in the buffer has delivered the end of the line, and the
// extra read that would only confirm EOF is skipped (it is a whole system
// call per process, a tenth of the scan).
func (r *reader) readAll(fd int) (int, error) {
	n := 0
	for {
		if n == len(r.buf) {
			r.buf = append(r.buf, make([]byte, len(r.buf))...)
		}
		m, err := unix.Read(fd, r.buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return n, err
		}
		if m <= 0 {
			return n, nil
		}
		n += m
		if n < len(r.buf) {
			return n, nil
		}
	}
}

// openat opens the NUL-terminated path relative to dirfd read-only. It calls
// the syscall directly because unix.Openat copies its string argument into a
// fresh C string on every call.
func openat(dirfd int, path []byte) (int, error) {
	for {
		fd, _, errno := unix.Syscall6(unix.SYS_OPENAT, uintptr(dirfd), uintptr(unsafe.Pointer(&path[0])),
			uintptr(unix.O_RDONLY|unix.O_CLOEXEC), 0, 0, 0)
		if errno == unix.EINTR {
			continue
		}
		if errno != 0 {
			return -1, errno
		}
		return int(fd), nil
	}
}

func statPath(pid int) string {
	return ProcRoot + "/" + strconv.Itoa(pid) + "/stat"
}

// ReadEnviron reads /proc/<pid>/environ: the environment the process was
// started with (later changes the process makes to its own environment are
// not reflected), as "NAME=value" strings. A kernel thread has no environment
// and gives an empty slice. Reading another user's process needs privilege
// and otherwise fails with an error wrapping fs.ErrPermission. A missing
// process, and a zombie (it exited; its memory, environment included, is
// gone), give an error for which IsNotExist reports true.
//
// A process that is in the middle of execve, and one that has just returned
// from it, can read as empty for a moment: the kernel reports a successful
// exec (the point at which os/exec's Start returns) before it has copied the
// new environment onto the new stack.
func ReadEnviron(pid int) ([]string, error) {
	path := ProcRoot + "/" + strconv.Itoa(pid) + "/environ"
	if pid <= 0 {
		return nil, &fs.PathError{Op: "open", Path: path, Err: syscall.ENOENT}
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, syscall.ESRCH) {
		// The process has no address space: it is a zombie, exited just
		// now, or is a kernel thread. Only the last has an (empty)
		// environment. (A process caught between releasing its memory and
		// becoming a zombie also lands here and reads as empty.)
		if st, serr := ReadStat(pid); serr == nil && !st.Zombie() {
			return []string{}, nil
		}
	}
	if err != nil {
		return nil, err // already an *fs.PathError naming the path
	}
	s := strings.TrimSuffix(string(b), "\x00")
	if s == "" {
		return []string{}, nil
	}
	return strings.Split(s, "\x00"), nil
}
