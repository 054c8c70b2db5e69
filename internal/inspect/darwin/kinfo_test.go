package darwin

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The structs below copy golang.org/x/sys/unix's darwin declarations (ztypes_darwin_arm64.go
// and ztypes_darwin_amd64.go, which agree) field for field, with pointers as uint64, so the
// compiler lays them out here as it does on a 64-bit Mac. Fixtures are written at the
// offsets this mirror gives, which the decoder's own constants must match: a wrong
// constant in kinfo.go fails these tests on any 64-bit host.
type xTimeval struct {
	Sec  int64
	Usec int32
	_    [4]byte
}

type xItimerval struct{ Interval, Value xTimeval }

type xVmspace struct {
	Dummy  int32
	Dummy2 uint64
	Dummy3 [5]int32
	Dummy4 [3]uint64
}

type xPcred struct {
	Pc_lock  [72]int8
	Pc_ucred uint64
	P_ruid   uint32
	P_svuid  uint32
	P_rgid   uint32
	P_svgid  uint32
	P_refcnt int32
	_        [4]byte
}

type xUcred struct {
	Ref     int32
	Uid     uint32
	Ngroups int16
	Groups  [16]uint32
}

type xEproc struct {
	Paddr   uint64
	Sess    uint64
	Pcred   xPcred
	Ucred   xUcred
	Vm      xVmspace
	Ppid    int32
	Pgid    int32
	Jobc    int16
	Tdev    int32
	Tpgid   int32
	Tsess   uint64
	Wmesg   [8]byte
	Xsize   int32
	Xrssize int16
	Xccount int16
	Xswrss  int16
	Flag    int32
	Login   [12]byte
	Spare   [4]int32
	_       [4]byte
}

type xExternProc struct {
	P_starttime xTimeval
	P_vmspace   uint64
	P_sigacts   uint64
	P_flag      int32
	P_stat      int8
	P_pid       int32
	P_oppid     int32
	P_dupfd     int32
	User_stack  uint64
	Exit_thread uint64
	P_debugger  int32
	Sigwait     int32
	P_estcpu    uint32
	P_cpticks   int32
	P_pctcpu    uint32
	P_wchan     uint64
	P_wmesg     uint64
	P_swtime    uint32
	P_slptime   uint32
	P_realtimer xItimerval
	P_rtime     xTimeval
	P_uticks    uint64
	P_sticks    uint64
	P_iticks    uint64
	P_traceflag int32
	P_tracep    uint64
	P_siglist   int32
	P_textvp    uint64
	P_holdcnt   int32
	P_sigmask   uint32
	P_sigignore uint32
	P_sigcatch  uint32
	P_priority  uint8
	P_usrpri    uint8
	P_nice      int8
	P_comm      [17]byte
	P_pgrp      uint64
	P_addr      uint64
	P_xstat     uint16
	P_acflag    uint16
	P_ru        uint64
}

type xKinfoProc struct {
	Proc  xExternProc
	Eproc xEproc
}

// sizeofKinfoProc is golang.org/x/sys/unix.SizeofKinfoProc on darwin/amd64 and darwin/arm64.
const sizeofKinfoProc = 0x288

func needLP64(t testing.TB) {
	t.Helper()
	if unsafe.Sizeof(xKinfoProc{}) != sizeofKinfoProc {
		t.Skipf("the mirror of kinfo_proc is %d bytes on this host, not %d: the fixtures need a 64-bit host", unsafe.Sizeof(xKinfoProc{}), sizeofKinfoProc)
	}
}

// proc is what a fixture record holds, written at the mirror's offsets.
type proc struct {
	pid, ppid, pgid, tpgid int32
	tdev                   int32
	stat                   int8
	flag                   int32
	sec                    int64
	usec                   int32
	comm                   string // up to 17 bytes, written as is (no NUL added past 16)
}

// fixture builds the bytes sysctl kern.proc returns for procs. Fields Decode does not read
// are filled with noise, so a decoder reading the wrong place sees it.
func fixture(t testing.TB, procs ...proc) []byte {
	t.Helper()
	needLP64(t)
	var k xKinfoProc
	e := unsafe.Offsetof(k.Eproc)
	off := struct{ sec, usec, flag, stat, pid, comm, ppid, pgid, tdev, tpgid, oppid, jobc, ruid, uid, sess uintptr }{
		sec:   unsafe.Offsetof(k.Proc.P_starttime) + unsafe.Offsetof(k.Proc.P_starttime.Sec),
		usec:  unsafe.Offsetof(k.Proc.P_starttime) + unsafe.Offsetof(k.Proc.P_starttime.Usec),
		flag:  unsafe.Offsetof(k.Proc.P_flag),
		stat:  unsafe.Offsetof(k.Proc.P_stat),
		pid:   unsafe.Offsetof(k.Proc.P_pid),
		comm:  unsafe.Offsetof(k.Proc.P_comm),
		oppid: unsafe.Offsetof(k.Proc.P_oppid),
		ppid:  e + unsafe.Offsetof(k.Eproc.Ppid),
		pgid:  e + unsafe.Offsetof(k.Eproc.Pgid),
		jobc:  e + unsafe.Offsetof(k.Eproc.Jobc),
		tdev:  e + unsafe.Offsetof(k.Eproc.Tdev),
		tpgid: e + unsafe.Offsetof(k.Eproc.Tpgid),
		ruid:  e + unsafe.Offsetof(k.Eproc.Pcred) + unsafe.Offsetof(k.Eproc.Pcred.P_ruid),
		uid:   e + unsafe.Offsetof(k.Eproc.Ucred) + unsafe.Offsetof(k.Eproc.Ucred.Uid),
		sess:  e + unsafe.Offsetof(k.Eproc.Sess),
	}
	le := binary.LittleEndian
	out := make([]byte, 0, len(procs)*sizeofKinfoProc)
	for i, p := range procs {
		b := make([]byte, sizeofKinfoProc)
		for j := range b {
			b[j] = byte(0xA5 ^ j ^ i) // noise everywhere the fields below do not overwrite
		}
		le.PutUint64(b[off.sec:], uint64(p.sec))
		le.PutUint32(b[off.usec:], uint32(p.usec))
		le.PutUint32(b[off.flag:], uint32(p.flag))
		b[off.stat] = byte(p.stat)
		le.PutUint32(b[off.pid:], uint32(p.pid))
		comm := make([]byte, len(k.Proc.P_comm))
		copy(comm, p.comm)
		copy(b[off.comm:], comm)
		le.PutUint32(b[off.oppid:], 77777) // neighbours of the fields read: never confused with them
		le.PutUint32(b[off.ppid:], uint32(p.ppid))
		le.PutUint32(b[off.pgid:], uint32(p.pgid))
		le.PutUint16(b[off.jobc:], 0xBEEF)
		le.PutUint32(b[off.tdev:], uint32(p.tdev))
		le.PutUint32(b[off.tpgid:], uint32(p.tpgid))
		le.PutUint32(b[off.ruid:], 501)
		le.PutUint32(b[off.uid:], 501)
		le.PutUint64(b[off.sess:], 0)
		out = append(out, b...)
	}
	return out
}

func TestMirrorMatchesDecoderLayout(t *testing.T) {
	needLP64(t)
	var k xKinfoProc
	e := unsafe.Offsetof(k.Eproc)
	assert.Equal(t, uintptr(KinfoProcSize), unsafe.Sizeof(k))
	assert.Equal(t, uintptr(offStartSec), unsafe.Offsetof(k.Proc.P_starttime)+unsafe.Offsetof(k.Proc.P_starttime.Sec))
	assert.Equal(t, uintptr(offStartUsec), unsafe.Offsetof(k.Proc.P_starttime)+unsafe.Offsetof(k.Proc.P_starttime.Usec))
	assert.Equal(t, uintptr(offFlag), unsafe.Offsetof(k.Proc.P_flag))
	assert.Equal(t, uintptr(offStat), unsafe.Offsetof(k.Proc.P_stat))
	assert.Equal(t, uintptr(offPid), unsafe.Offsetof(k.Proc.P_pid))
	assert.Equal(t, uintptr(offComm), unsafe.Offsetof(k.Proc.P_comm))
	assert.Equal(t, uintptr(commLen), unsafe.Sizeof(k.Proc.P_comm))
	assert.Equal(t, uintptr(eprocOff), e)
	assert.Equal(t, uintptr(offPpid), e+unsafe.Offsetof(k.Eproc.Ppid))
	assert.Equal(t, uintptr(offPgid), e+unsafe.Offsetof(k.Eproc.Pgid))
	assert.Equal(t, uintptr(offTdev), e+unsafe.Offsetof(k.Eproc.Tdev))
	assert.Equal(t, uintptr(offTpgid), e+unsafe.Offsetof(k.Eproc.Tpgid))
}

// A table as a Mac shows it: launchd, kernel_task, a login shell on ttys000 running sleep
// in the foreground, a zombie, a daemon with a 16-byte name and no terminal.
var table = []proc{
	{pid: 0, ppid: 0, pgid: 0, tdev: noDev, stat: StatRun, flag: 0x00004004, sec: 1762157640, usec: 0, comm: "kernel_task"},
	{pid: 1, ppid: 0, pgid: 1, tdev: noDev, stat: StatRun, flag: 0x00004004, sec: 1762157662, usec: 123456, comm: "launchd"},
	{pid: 2211, ppid: 2210, pgid: 2211, tdev: 16 << 24, tpgid: 2212, stat: StatSleep, flag: 0x00004006, sec: 1763116270, usec: 5, comm: "zsh"},
	{pid: 2212, ppid: 2211, pgid: 2212, tdev: 16<<24 | 0, tpgid: 2212, stat: StatSleep, flag: 0x00004006, sec: 1763116277, usec: 999999, comm: "sleep"},
	{pid: 2300, ppid: 2211, pgid: 2211, tdev: 16<<24 | 3, tpgid: 2212, stat: StatZombie, flag: 0x00002006, sec: 1763116278, usec: 1, comm: "true"},
	{pid: 99998, ppid: 1, pgid: 99998, tdev: noDev, tpgid: 4242, stat: StatSleep, flag: 0x00004004, sec: 1763116279, usec: 42, comm: "com.apple.Webkit.Networking"},
	{pid: 99999, ppid: 1, pgid: 99999, tdev: noDev, stat: StatStop, flag: 0x00004004, sec: 1763116280, usec: 0, comm: "com.apple.WebKit\x00"},
}

func TestDecodeTable(t *testing.T) {
	recs, err := Decode(fixture(t, table...))
	require.NoError(t, err)
	require.Len(t, recs, len(table))

	assert.Equal(t, Record{Pid: 0, PPid: 0, Pgid: 0, Sid: -1, Stat: StatRun, Flag: 0x4004,
		Start: 1762157640_000000, Comm: "kernel_task"}, recs[0])
	assert.Equal(t, Record{Pid: 1, PPid: 0, Pgid: 1, Sid: -1, Stat: StatRun, Flag: 0x4004,
		Start: 1762157662_123456, Comm: "launchd"}, recs[1], "microseconds kept")
	assert.Equal(t, Record{Pid: 2211, PPid: 2210, Pgid: 2211, Sid: -1, Tpgid: 2212, Tty: 16 << 24,
		Stat: StatSleep, Flag: 0x4006, Start: 1763116270_000005, Comm: "zsh"}, recs[2], "ttys000 is major 16, minor 0")
	assert.Equal(t, uint64(1763116277_999999), recs[3].Start)
	assert.Less(t, recs[2].Start, recs[3].Start, "a child's token is not below its parent's")
	assert.False(t, recs[3].Zombie())
	assert.Equal(t, uint64(16<<24|3), recs[4].Tty)
	assert.True(t, recs[4].Zombie())
	assert.Equal(t, "com.apple.Webkit.", recs[5].Comm, "a name without NUL is cut at the field's 17 bytes")
	assert.Equal(t, "com.apple.WebKit", recs[6].Comm, "the kernel's 16 bytes and a NUL")
	assert.Equal(t, uint64(0), recs[5].Tty)
	assert.Equal(t, 0, recs[5].Tpgid, "no controlling terminal: no foreground group")
	for _, r := range recs {
		assert.Equal(t, -1, r.Sid, "Decode leaves Sid unknown")
	}
}

func TestDecodeEmpty(t *testing.T) {
	recs, err := Decode(nil)
	require.NoError(t, err)
	assert.Empty(t, recs)
}

func TestDecodeMalformed(t *testing.T) {
	good := table[1]
	tests := []struct {
		name string
		data func() []byte
		want string
		idx  int
	}{
		{"cut record", func() []byte { return fixture(t, good, good)[:KinfoProcSize+100] }, "748 bytes is not a whole number of 648-byte records", -1},
		{"negative pid", func() []byte { p := good; p.pid = -3; return fixture(t, good, p) }, "p_pid -3 is negative", 1},
		{"negative ppid", func() []byte { p := good; p.ppid = -1; return fixture(t, good, p) }, "e_ppid -1 is negative", 1},
		{"negative pgid", func() []byte { p := good; p.pgid = -9; return fixture(t, good, p) }, "e_pgid -9 is negative", 1},
		{"usec too big", func() []byte { p := good; p.usec = 1_000_000; return fixture(t, good, p) }, "p_starttime 1762157662.1000000 s", 1},
		{"negative usec", func() []byte { p := good; p.usec = -1; return fixture(t, good, p) }, "p_starttime", 1},
		{"before 1970", func() []byte { p := good; p.sec = -5; return fixture(t, good, p) }, "p_starttime -5.123456 s", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.data())
			require.Error(t, err)
			var de *DecodeError
			require.ErrorAs(t, err, &de)
			assert.ErrorIs(t, err, ErrMalformed)
			assert.Equal(t, tc.idx, de.Index)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestStartToken(t *testing.T) {
	tok, err := StartToken(1, 2)
	require.NoError(t, err)
	assert.Equal(t, uint64(1_000_002), tok)
	a, _ := StartToken(1763116277, 999999)
	b, _ := StartToken(1763116278, 0)
	assert.Equal(t, a+1, b, "one microsecond apart across a second")
	_, err = StartToken(1<<62, 0)
	assert.ErrorIs(t, err, ErrMalformed, "a time whose microseconds overflow 64 bits")
}

func TestPick(t *testing.T) {
	recs, err := Decode(fixture(t, table...))
	require.NoError(t, err)
	r, err := Pick(recs, 2212)
	require.NoError(t, err)
	assert.Equal(t, "sleep", r.Comm)

	_, err = Pick(recs, 4242)
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = Pick(nil, 1) // kern.proc.pid.<pid> of a missing pid returns no record
	assert.ErrorIs(t, err, ErrNotFound)
	assert.Contains(t, err.Error(), "pid 1")
}

func TestIs(t *testing.T) {
	recs, err := Decode(fixture(t, table...))
	require.NoError(t, err)
	sleep, zombie := recs[3], recs[4]
	assert.True(t, sleep.Is(1763116277_999999))
	assert.False(t, sleep.Is(1763116277_999998), "another process had the pid a microsecond earlier")
	assert.False(t, sleep.Is(1763116277), "a token in seconds (the ps format) never matches")
	assert.False(t, zombie.Is(zombie.Start), "a zombie is not alive")
}

var errGone = errors.New("gone")

func TestFillSessions(t *testing.T) {
	recs, err := Decode(fixture(t, table...))
	require.NoError(t, err)
	var asked []int
	getsid := func(pid int) (int, error) {
		asked = append(asked, pid)
		switch pid {
		case 99998:
			return 0, fmt.Errorf("wrapped: %w", errGone)
		case 1:
			return 1, nil
		}
		return 2210, nil
	}
	isGone := func(err error) bool { return errors.Is(err, errGone) }
	require.NoError(t, FillSessions(recs, getsid, isGone))
	assert.Equal(t, []int{1, 2211, 2212, 99998, 99999}, asked, "not pid 0 (getsid(0) is the caller), not the zombie")
	sids := make([]int, len(recs))
	for i, r := range recs {
		sids[i] = r.Sid
	}
	assert.Equal(t, []int{-1, 1, 2210, 2210, -1, -1, 2210}, sids)
}

func TestFillSessionsError(t *testing.T) {
	recs, err := Decode(fixture(t, table...))
	require.NoError(t, err)
	boom := errors.New("boom")
	err = FillSessions(recs, func(pid int) (int, error) {
		if pid == 2211 {
			return 0, boom
		}
		return 1, nil
	}, func(error) bool { return false })
	assert.ErrorIs(t, err, boom)
	assert.Contains(t, err.Error(), "getsid(2211)")
}

func TestSysctlError(t *testing.T) {
	boom := errors.New("operation not permitted")
	err := error(&SysctlError{Name: "kern.proc.pid", Args: []int{42}, Err: boom})
	assert.Equal(t, "sysctl kern.proc.pid.42: operation not permitted", err.Error())
	assert.ErrorIs(t, err, boom)
	assert.Equal(t, "sysctl kern.proc.all: operation not permitted", (&SysctlError{Name: "kern.proc.all", Err: boom}).Error())
}

func FuzzDecode(f *testing.F) {
	needLP64(f)
	f.Add(fixture(f, table...))
	f.Add(fixture(f, table[2]))
	f.Add(make([]byte, KinfoProcSize))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, err := Decode(b)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v is not a *DecodeError wrapping ErrMalformed", err)
			}
			return
		}
		if len(recs) != len(b)/KinfoProcSize {
			t.Fatalf("%d records from %d bytes", len(recs), len(b))
		}
		for _, r := range recs {
			if r.Pid < 0 || r.PPid < 0 || r.Pgid < 0 || r.Sid != -1 || len(r.Comm) > commLen {
				t.Fatalf("bad record %+v", r)
			}
			if r.Tty == 0 && r.Tpgid != 0 {
				t.Fatalf("foreground group %d without a terminal: %+v", r.Tpgid, r)
			}
		}
	})
}
