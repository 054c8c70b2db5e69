//go:build linux

package linux

import (
	"errors"
	"io/fs"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Entry is one process listed by Census.Since.
type Entry struct {
	Pid       int
	StartTime uint64 // field 22 of /proc/<pid>/stat
}

// Census lists the user-space processes of one user that started at or after a given start
// token, as a sweep over the whole table needs before it reads anything else of a process.
// Its zero value is ready to use, and it is safe for concurrent use.
//
// The owner comes from one fstatat(2) of /proc/<pid>, so processes of other users cost no more
// than that. The start token and the kernel-thread flag come from /proc/<pid>/stat, whose
// read is what a table scan spends most of its time on (the kernel formats some fifty fields
// for it); they never change during the life of a process, so a Census keeps them from one
// scan to the next and reads the stat file only of processes it has not seen before.
//
// A remembered entry is tied to one process by the inode number and inode change time of its
// /proc/<pid> directory, which the same fstatat returns. procfs makes that inode for one
// process (it holds a reference to the process's struct pid), and path lookup revalidates the
// directory against that process and drops it once the process is gone. So a process that
// later gets the same pid gets an inode of its own: its number comes from a counter that does
// not repeat a value before it wraps at 2^32, and its change time is when it was made, after
// the process started. An inode that procfs evicts and makes again for the same process only
// costs one more stat read.
type Census struct {
	mu    sync.Mutex
	known map[int]censusEntry // by pid: what the last scan read or reused

	onStatRead func(pid int) // tests: called before each stat read
}

type censusEntry struct {
	ino       uint64
	ctime     unix.Timespec
	startTime uint64
	kthread   bool
}

// Since lists /proc once and returns the processes whose /proc/<pid> directory uid owns (that
// is the process's effective uid, or root's for a process that is not dumpable, as for the
// rest of /proc/<pid>) and that are not kernel threads and started at or after since, in pid
// order. Processes that exit during the scan, or that this caller may not look at (procfs
// mounted with hidepid), are left out. So is a process for which skip (when not nil) reports
// true; one it has not seen before is then neither read (its stat file) nor remembered.
func (c *Census) Since(uid int, since uint64, skip func(pid int) bool) ([]Entry, error) {
	dirfd, err := unix.Open(ProcRoot, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: ProcRoot, Err: err}
	}
	defer unix.Close(dirfd)

	c.mu.Lock()
	old := c.known
	c.mu.Unlock()
	next := make(map[int]censusEntry, len(old))

	r := reader{buf: make([]byte, statBufSize), path: make([]byte, 0, 32)}
	dents := make([]byte, 16<<10)
	var out []Entry
	for {
		n, err := unix.Getdents(dirfd, dents)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "readdirent", Path: ProcRoot, Err: err}
		}
		if n <= 0 {
			break
		}
		for b := dents[:n]; len(b) > 0; {
			pid, reclen := direntPid(b)
			if reclen <= 0 || reclen > len(b) {
				return nil, &fs.PathError{Op: "readdirent", Path: ProcRoot, Err: errors.New("corrupt directory entry")}
			}
			b = b[reclen:]
			if pid <= 0 {
				continue
			}
			var st unix.Stat_t
			if err := fstatat(dirfd, pid, &st); err != nil {
				if IsNotExist(err) {
					continue
				}
				return nil, err
			}
			if int(st.Uid) != uid {
				continue
			}
			e, ok := old[pid]
			if !ok || e.ino != uint64(st.Ino) || e.ctime != st.Ctim {
				if skip != nil && skip(pid) {
					continue
				}
				if c.onStatRead != nil {
					c.onStatRead(pid)
				}
				br, err := r.readBrief(dirfd, "", pid)
				if err != nil {
					if IsNotExist(err) || errors.Is(err, fs.ErrPermission) {
						continue
					}
					return nil, err
				}
				e = censusEntry{ino: uint64(st.Ino), ctime: st.Ctim, startTime: br.StartTime, kthread: br.KernelThread()}
			}
			next[pid] = e
			if !e.kthread && e.startTime >= since && (skip == nil || !skip(pid)) {
				out = append(out, Entry{Pid: pid, StartTime: e.startTime})
			}
		}
	}
	c.mu.Lock()
	c.known = next // a scan that ran alongside may be lost; it only costs stat reads
	c.mu.Unlock()
	return out, nil
}

// fstatat fills st for the directory dirfd/<pid>. Under procfs's hidepid=invisible another
// user's process is missing (ENOENT); a permission error is not expected, so it is returned,
// not taken for a missing process.
func fstatat(dirfd, pid int, st *unix.Stat_t) error {
	name := strconv.Itoa(pid)
	for {
		err := unix.Fstatat(dirfd, name, st, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &fs.PathError{Op: "fstatat", Path: ProcRoot + "/" + name, Err: err}
		}
		return nil
	}
}

// readBrief opens prefix+"<pid>/stat" relative to dirfd, reads it and parses it with
// ParseBrief.
func (r *reader) readBrief(dirfd int, prefix string, pid int) (Brief, error) {
	b, err := r.statBytes(dirfd, prefix, pid)
	if err != nil {
		return Brief{}, err
	}
	br, err := ParseBrief(b)
	if err != nil {
		return Brief{}, &fs.PathError{Op: "parse", Path: statPath(pid), Err: err}
	}
	if br.Pid != pid {
		return Brief{}, &fs.PathError{Op: "parse", Path: statPath(pid), Err: errors.New("stat names pid " + strconv.Itoa(br.Pid))}
	}
	return br, nil
}

// ReadBrief reads /proc/<pid>/stat and parses it with ParseBrief. A missing process gives an
// *fs.PathError for which IsNotExist reports true.
func ReadBrief(pid int) (Brief, error) {
	if pid <= 0 {
		return Brief{}, &fs.PathError{Op: "open", Path: statPath(pid), Err: syscall.ENOENT}
	}
	r := reader{buf: make([]byte, statBufSize), path: make([]byte, 0, 32)}
	return r.readBrief(unix.AT_FDCWD, ProcRoot+"/", pid)
}

// environBufSize is the first buffer AppendEnviron grows buf to: most environments fit.
const environBufSize = 16 << 10

// AppendEnviron appends the raw contents of /proc/<pid>/environ (the "NAME=value" entries of
// the environment the process's program was started with, each ended by a NUL byte) to buf and
// returns the extended buffer, so that a caller reading many environments reuses one buffer.
// It reads nothing but the file, unlike ReadEnviron, which looks at the stat file when the
// environ file cannot be read: here an error is the one the environ file gave. A process
// without an address space (a kernel thread, or a process exiting) reads as empty or fails
// with ESRCH, depending on the kernel; a missing process fails with an error for which
// IsNotExist reports true; another user's process needs privilege and otherwise fails with an
// error wrapping fs.ErrPermission. The middle of execve reads as empty (see Brief.EnvReady).
func AppendEnviron(buf []byte, pid int) ([]byte, error) {
	path := ProcRoot + "/" + strconv.Itoa(pid) + "/environ"
	if pid <= 0 {
		return buf, &fs.PathError{Op: "open", Path: path, Err: syscall.ENOENT}
	}
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return buf, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	start := len(buf)
	if cap(buf)-len(buf) < environBufSize {
		buf = append(buf, make([]byte, environBufSize)...)[:start]
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)] // let append pick the next capacity
		}
		m, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return buf[:start], &fs.PathError{Op: "read", Path: path, Err: err}
		}
		if m <= 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+m]
	}
}
