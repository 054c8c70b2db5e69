//go:build darwin

package darwin

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// The offsets Decode reads (kinfo.go) must be those of x/sys's KinfoProc, the struct the
// kernel fills. Each pair of constants below is a compile-time check: when an offset
// differs, one of the two subtractions is negative, which a uintptr constant cannot hold,
// and this file does not compile.
const (
	_ = uintptr(unix.SizeofKinfoProc) - KinfoProcSize
	_ = KinfoProcSize - uintptr(unix.SizeofKinfoProc)
	_ = unsafe.Sizeof(unix.KinfoProc{}) - KinfoProcSize
	_ = KinfoProcSize - unsafe.Sizeof(unix.KinfoProc{})

	_ = 0 - unsafe.Offsetof(unix.KinfoProc{}.Proc)
	_ = unsafe.Offsetof(unix.KinfoProc{}.Proc.P_starttime) + unsafe.Offsetof(unix.KinfoProc{}.Proc.P_starttime.Sec) - offStartSec
	_ = offStartSec - unsafe.Offsetof(unix.KinfoProc{}.Proc.P_starttime) - unsafe.Offsetof(unix.KinfoProc{}.Proc.P_starttime.Sec)
	_ = unsafe.Offsetof(unix.KinfoProc{}.Proc.P_starttime) + unsafe.Offsetof(unix.KinfoProc{}.Proc.P_starttime.Usec) - offStartUsec
	_ = offStartUsec - unsafe.Offsetof(unix.KinfoProc{}.Proc.P_starttime) - unsafe.Offsetof(unix.KinfoProc{}.Proc.P_starttime.Usec)
	_ = unsafe.Offsetof(unix.KinfoProc{}.Proc.P_flag) - offFlag
	_ = offFlag - unsafe.Offsetof(unix.KinfoProc{}.Proc.P_flag)
	_ = unsafe.Offsetof(unix.KinfoProc{}.Proc.P_stat) - offStat
	_ = offStat - unsafe.Offsetof(unix.KinfoProc{}.Proc.P_stat)
	_ = unsafe.Offsetof(unix.KinfoProc{}.Proc.P_pid) - offPid
	_ = offPid - unsafe.Offsetof(unix.KinfoProc{}.Proc.P_pid)
	_ = unsafe.Offsetof(unix.KinfoProc{}.Proc.P_comm) - offComm
	_ = offComm - unsafe.Offsetof(unix.KinfoProc{}.Proc.P_comm)
	_ = unsafe.Sizeof(unix.KinfoProc{}.Proc.P_comm) - commLen
	_ = commLen - unsafe.Sizeof(unix.KinfoProc{}.Proc.P_comm)

	_ = unsafe.Offsetof(unix.KinfoProc{}.Eproc) - eprocOff
	_ = eprocOff - unsafe.Offsetof(unix.KinfoProc{}.Eproc)
	_ = eprocOff + unsafe.Offsetof(unix.KinfoProc{}.Eproc.Ppid) - offPpid
	_ = offPpid - eprocOff - unsafe.Offsetof(unix.KinfoProc{}.Eproc.Ppid)
	_ = eprocOff + unsafe.Offsetof(unix.KinfoProc{}.Eproc.Pgid) - offPgid
	_ = offPgid - eprocOff - unsafe.Offsetof(unix.KinfoProc{}.Eproc.Pgid)
	_ = eprocOff + unsafe.Offsetof(unix.KinfoProc{}.Eproc.Tdev) - offTdev
	_ = offTdev - eprocOff - unsafe.Offsetof(unix.KinfoProc{}.Eproc.Tdev)
	_ = eprocOff + unsafe.Offsetof(unix.KinfoProc{}.Eproc.Tpgid) - offTpgid
	_ = offTpgid - eprocOff - unsafe.Offsetof(unix.KinfoProc{}.Eproc.Tpgid)
)

// The field types Decode assumes: the sizes must match too.
const (
	_ = unsafe.Sizeof(unix.KinfoProc{}.Proc.P_starttime.Sec) - 8
	_ = 8 - unsafe.Sizeof(unix.KinfoProc{}.Proc.P_starttime.Sec)
	_ = unsafe.Sizeof(unix.KinfoProc{}.Proc.P_starttime.Usec) - 4
	_ = 4 - unsafe.Sizeof(unix.KinfoProc{}.Proc.P_starttime.Usec)
	_ = unsafe.Sizeof(unix.KinfoProc{}.Proc.P_stat) - 1
	_ = 1 - unsafe.Sizeof(unix.KinfoProc{}.Proc.P_stat)
	_ = unsafe.Sizeof(unix.KinfoProc{}.Proc.P_pid) + unsafe.Sizeof(unix.KinfoProc{}.Proc.P_flag) - 8
	_ = 8 - unsafe.Sizeof(unix.KinfoProc{}.Proc.P_pid) - unsafe.Sizeof(unix.KinfoProc{}.Proc.P_flag)
	_ = unsafe.Sizeof(unix.KinfoProc{}.Eproc.Ppid) + unsafe.Sizeof(unix.KinfoProc{}.Eproc.Pgid) - 8
	_ = 8 - unsafe.Sizeof(unix.KinfoProc{}.Eproc.Ppid) - unsafe.Sizeof(unix.KinfoProc{}.Eproc.Pgid)
	_ = unsafe.Sizeof(unix.KinfoProc{}.Eproc.Tdev) + unsafe.Sizeof(unix.KinfoProc{}.Eproc.Tpgid) - 8
	_ = 8 - unsafe.Sizeof(unix.KinfoProc{}.Eproc.Tdev) - unsafe.Sizeof(unix.KinfoProc{}.Eproc.Tpgid)
)
