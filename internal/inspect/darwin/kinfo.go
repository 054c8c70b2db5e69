package darwin

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// KinfoProcSize is the size in bytes of one struct kinfo_proc as the kernel hands it to a
// 64-bit process (golang.org/x/sys/unix.SizeofKinfoProc on darwin/amd64 and darwin/arm64).
const KinfoProcSize = 648

// Offsets of the fields Decode reads in one struct kinfo_proc (kp_proc, a struct
// extern_proc, at 0; kp_eproc, a struct eproc, at eprocOff), as laid out by
// golang.org/x/sys/unix.KinfoProc, which is the same on darwin/amd64 and darwin/arm64. The
// darwin build checks every one of them against that type (layout_darwin.go): a mismatch
// does not compile.
const (
	offStartSec  = 0   // kp_proc.p_starttime.tv_sec, int64
	offStartUsec = 8   // kp_proc.p_starttime.tv_usec, int32
	offFlag      = 32  // kp_proc.p_flag, int32
	offStat      = 36  // kp_proc.p_stat, int8
	offPid       = 40  // kp_proc.p_pid, int32
	offComm      = 243 // kp_proc.p_comm, [MAXCOMLEN+1]byte
	commLen      = 17

	eprocOff = 296            // kp_eproc
	offPpid  = eprocOff + 264 // kp_eproc.e_ppid, int32
	offPgid  = eprocOff + 268 // kp_eproc.e_pgid, int32
	offTdev  = eprocOff + 276 // kp_eproc.e_tdev, int32 (dev_t)
	offTpgid = eprocOff + 280 // kp_eproc.e_tpgid, int32
)

// Process states (p_stat), as defined in XNU's sys/proc.h.
const (
	StatIdle   = 1 // SIDL: being created by fork
	StatRun    = 2 // SRUN: runnable
	StatSleep  = 3 // SSLEEP: sleeping on an address
	StatStop   = 4 // SSTOP: stopped
	StatZombie = 5 // SZOMB: exited, waiting to be reaped
)

// noDev is NODEV, the e_tdev of a process without a controlling terminal ((dev_t)-1).
const noDev = -1

// Record is one process of the table.
type Record struct {
	Pid  int
	PPid int // e_ppid: the current parent
	Pgid int
	// Sid is the session id. Decode sets -1 (struct kinfo_proc has none); Snapshot and
	// Lookup fill it with getsid(2). It stays -1 for a zombie and for a process that
	// exited before getsid ran.
	Sid int
	// Tpgid is the foreground process group of the controlling terminal, 0 when there is
	// no controlling terminal.
	Tpgid int
	// Tty is the controlling terminal as a Darwin dev_t (major<<24 | minor, the st_rdev
	// stat(2) reports for the terminal device), 0 when there is none.
	Tty uint64
	// Stat is the process state p_stat (StatIdle ... StatZombie).
	Stat int8
	// Flag is p_flag, the kernel's P_* bits (P_CONTROLT, P_WEXIT, ...).
	Flag int32
	// Start is the start token: p_starttime in microseconds since the Unix epoch. The
	// kernel records it once, at fork, from the calendar clock; it never changes after.
	Start uint64
	// Comm is p_comm: the executable's name (not its path), cut to 16 bytes by the kernel.
	Comm string
}

// Zombie reports whether the process has exited and waits to be reaped.
func (r Record) Zombie() bool { return r.Stat == StatZombie }

// Is reports whether r is a live (not zombie) process with start token start: the
// identity test of Alive.
func (r Record) Is(start uint64) bool { return !r.Zombie() && r.Start == start }

// ErrMalformed is wrapped by every error Decode returns.
var ErrMalformed = errors.New("malformed kinfo_proc data")

// ErrNotFound is wrapped by the error of a lookup of a process that does not exist (or
// exited and was reaped before it was read).
var ErrNotFound = errors.New("procinspect/darwin: no such process")

// SysctlError reports a sysctl read of the process table that failed.
type SysctlError struct {
	Name string // the sysctl name, e.g. "kern.proc.pid"
	Args []int  // the numbers after the name, e.g. the pid
	Err  error  // the system's error (a unix.Errno on darwin)
}

// Error names the sysctl and its failure, e.g. "sysctl kern.proc.pid.42: operation not permitted".
func (e *SysctlError) Error() string {
	b := []byte("sysctl " + e.Name)
	for _, a := range e.Args {
		b = fmt.Appendf(b, ".%d", a)
	}
	return string(b) + ": " + e.Err.Error()
}

// Unwrap returns Err.
func (e *SysctlError) Unwrap() error { return e.Err }

// DecodeError reports kinfo_proc data that Decode could not read.
type DecodeError struct {
	Index int   // 0-based index of the record, -1 when the data as a whole is wrong
	Pid   int   // the record's pid, when Index >= 0
	Err   error // what was wrong; wraps ErrMalformed
}

// Error names the record and says what was wrong with it.
func (e *DecodeError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("procinspect/darwin: kinfo_proc data: %v", e.Err)
	}
	return fmt.Sprintf("procinspect/darwin: kinfo_proc record %d (pid %d): %v", e.Index, e.Pid, e.Err)
}

// Unwrap returns Err, so errors.Is(err, ErrMalformed) holds.
func (e *DecodeError) Unwrap() error { return e.Err }

// Decode reads what sysctl kern.proc returns to a 64-bit process: a packed array of struct
// kinfo_proc (KinfoProcSize bytes each, little-endian as on every 64-bit Mac). A length
// that is not a whole number of records, a negative id, or a start time that is not a
// valid timeval gives a *DecodeError. Decode never panics.
func Decode(b []byte) ([]Record, error) {
	if len(b)%KinfoProcSize != 0 {
		return nil, &DecodeError{Index: -1, Err: fmt.Errorf("%w: %d bytes is not a whole number of %d-byte records", ErrMalformed, len(b), KinfoProcSize)}
	}
	recs := make([]Record, 0, len(b)/KinfoProcSize)
	for i := 0; len(b) > 0; i++ {
		r, err := decodeOne(b[:KinfoProcSize])
		if err != nil {
			return nil, &DecodeError{Index: i, Pid: r.Pid, Err: err}
		}
		recs = append(recs, r)
		b = b[KinfoProcSize:]
	}
	return recs, nil
}

func decodeOne(b []byte) (Record, error) {
	le := binary.LittleEndian
	i32 := func(off int) int32 { return int32(le.Uint32(b[off:])) }
	r := Record{
		Pid:   int(i32(offPid)),
		PPid:  int(i32(offPpid)),
		Pgid:  int(i32(offPgid)),
		Sid:   -1,
		Tpgid: int(i32(offTpgid)),
		Stat:  int8(b[offStat]),
		Flag:  i32(offFlag),
	}
	for _, f := range [...]struct {
		name string
		v    int
	}{{"p_pid", r.Pid}, {"e_ppid", r.PPid}, {"e_pgid", r.Pgid}} {
		if f.v < 0 {
			return r, fmt.Errorf("%w: %s %d is negative", ErrMalformed, f.name, f.v)
		}
	}
	start, err := StartToken(int64(le.Uint64(b[offStartSec:])), i32(offStartUsec))
	if err != nil {
		return r, err
	}
	r.Start = start
	if tdev := i32(offTdev); tdev != noDev && tdev != 0 {
		r.Tty = uint64(uint32(tdev))
	} else {
		r.Tpgid = 0 // no controlling terminal (NODEV): no foreground group either
	}
	comm := b[offComm : offComm+commLen]
	if j := bytes.IndexByte(comm, 0); j >= 0 {
		comm = comm[:j]
	}
	r.Comm = string(comm)
	return r, nil
}

// StartToken is the start token of a process that started at the timeval sec.usec: the
// microseconds since the Unix epoch. A negative time or a usec outside [0, 1e6) gives an
// error wrapping ErrMalformed.
func StartToken(sec int64, usec int32) (uint64, error) {
	const maxSec = (1<<64 - 1 - 999_999) / 1_000_000
	if sec < 0 || uint64(sec) > maxSec || usec < 0 || usec >= 1_000_000 {
		return 0, fmt.Errorf("%w: p_starttime %d.%06d s is not a valid time", ErrMalformed, sec, usec)
	}
	return uint64(sec)*1_000_000 + uint64(usec), nil
}

// Pick returns the record of pid among recs (what a read of kern.proc.pid.<pid> gave), or
// an error wrapping ErrNotFound when there is none.
func Pick(recs []Record, pid int) (Record, error) {
	for _, r := range recs {
		if r.Pid == pid {
			return r, nil
		}
	}
	return Record{}, fmt.Errorf("pid %d: %w", pid, ErrNotFound)
}

// FillSessions sets the Sid of each record from getsid (getsid(2) on darwin), right after
// the table was read. Zombies, which getsid refuses, and pid 0 (for which getsid would
// answer about the caller) keep Sid -1, and so does a process getsid reports gone (isGone
// says which errors mean that). Any other error stops the fill and is returned, wrapped,
// naming the pid.
func FillSessions(recs []Record, getsid func(pid int) (int, error), isGone func(error) bool) error {
	for i := range recs {
		r := &recs[i]
		if r.Pid <= 0 || r.Zombie() {
			continue
		}
		sid, err := getsid(r.Pid)
		switch {
		case err == nil:
			r.Sid = sid
		case isGone(err):
		default:
			return fmt.Errorf("procinspect/darwin: getsid(%d): %w", r.Pid, err)
		}
	}
	return nil
}
