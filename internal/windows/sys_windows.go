//go:build windows

package windows

import (
	"errors"
	"fmt"
	"path/filepath"
	"syscall"
	"unsafe"

	xwin "golang.org/x/sys/windows"

	"github.com/subkit/subkit/internal/windows/winapi"
)

// SysProcAttr returns the attributes Attach expects: the leader starts suspended, so it can
// join its job before running anything, and leads a console process group of its own, so
// CTRL_BREAK_EVENT can address it.
func SysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{CreationFlags: xwin.CREATE_SUSPENDED | xwin.CREATE_NEW_PROCESS_GROUP}
}

// NativeSys returns the real OS calls (kernel32 through golang.org/x/sys/windows, and
// NtResumeProcess from ntdll).
func NativeSys() Sys { return nativeSys{} }

// DefaultRunner runs taskkill.exe from the system directory (never from PATH), with no
// window.
func DefaultRunner() Runner {
	dir, err := xwin.GetSystemDirectory()
	if err != nil || dir == "" {
		return ExecRunner{} // Run reports ErrTaskkillMissing
	}
	return ExecRunner{
		Path:        filepath.Join(dir, "taskkill.exe"),
		SysProcAttr: &syscall.SysProcAttr{HideWindow: true, CreationFlags: xwin.CREATE_NO_WINDOW},
	}
}

type nativeSys struct{}

// osErr wraps an OS error with what failed, mapping access denied and no-such-process to the
// package's sentinels.
func osErr(what string, err error) error {
	switch {
	case errors.Is(err, xwin.ERROR_ACCESS_DENIED):
		return fmt.Errorf("%s: %w: %w", what, ErrAccessDenied, err)
	case errors.Is(err, xwin.ERROR_INVALID_PARAMETER):
		// What OpenProcess says for a pid with no process.
		return fmt.Errorf("%s: %w: %w", what, ErrNoProcess, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func (nativeSys) CreateJob() (Job, error) {
	h, err := xwin.CreateJobObject(nil, nil)
	if err != nil {
		return nil, osErr("CreateJobObject", err)
	}
	var info xwin.JOBOBJECT_EXTENDED_LIMIT_INFORMATION
	info.BasicLimitInformation.LimitFlags = xwin.JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE
	if _, err := xwin.SetInformationJobObject(h, xwin.JobObjectExtendedLimitInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info))); err != nil {
		xwin.CloseHandle(h)
		return nil, osErr("SetInformationJobObject(KILL_ON_JOB_CLOSE)", err)
	}
	return nativeJob{h}, nil
}

func filetime(ft xwin.Filetime) uint64 {
	return uint64(ft.HighDateTime)<<32 | uint64(ft.LowDateTime)
}

func processStart(h xwin.Handle) (uint64, error) {
	var created, exited, kernel, user xwin.Filetime
	if err := xwin.GetProcessTimes(h, &created, &exited, &kernel, &user); err != nil {
		return 0, osErr("GetProcessTimes", err)
	}
	return filetime(created), nil
}

func (nativeSys) ProcessStart(handle uintptr) (uint64, error) {
	return processStart(xwin.Handle(handle))
}

func (nativeSys) Resume(handle uintptr) error {
	if err := winapi.NtResumeProcess(xwin.Handle(handle)); err != nil {
		return fmt.Errorf("NtResumeProcess: %w", err)
	}
	return nil
}

func (nativeSys) Exited(handle uintptr) (bool, error) {
	ev, err := xwin.WaitForSingleObject(xwin.Handle(handle), 0)
	switch {
	case err != nil:
		return false, osErr("WaitForSingleObject", err)
	case ev == xwin.WAIT_OBJECT_0:
		return true, nil
	case ev == uint32(xwin.WAIT_TIMEOUT):
		return false, nil
	}
	return false, fmt.Errorf("WaitForSingleObject: unexpected result %#x", ev)
}

func (nativeSys) OpenProcess(pid int) (Process, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("OpenProcess: %w: pid %d", ErrNoProcess, pid)
	}
	h, err := xwin.OpenProcess(xwin.PROCESS_QUERY_LIMITED_INFORMATION, false, uint32(pid))
	if err != nil {
		return nil, osErr("OpenProcess", err)
	}
	return nativeProcess{h}, nil
}

func (nativeSys) CtrlBreak(pgid int) error {
	if pgid <= 0 {
		// 0 would mean every process on this console, this one included.
		return fmt.Errorf("GenerateConsoleCtrlEvent: %w: group %d", ErrNoProcess, pgid)
	}
	if err := xwin.GenerateConsoleCtrlEvent(xwin.CTRL_BREAK_EVENT, uint32(pgid)); err != nil {
		return osErr("GenerateConsoleCtrlEvent", err)
	}
	return nil
}

type nativeProcess struct{ h xwin.Handle }

func (p nativeProcess) Start() (uint64, error) { return processStart(p.h) }
func (p nativeProcess) Close() error           { return xwin.CloseHandle(p.h) }

type nativeJob struct{ h xwin.Handle }

func (j nativeJob) Assign(handle uintptr) error {
	if err := xwin.AssignProcessToJobObject(j.h, xwin.Handle(handle)); err != nil {
		return osErr("AssignProcessToJobObject", err)
	}
	return nil
}

func (j nativeJob) Terminate(exitCode uint32) error {
	if err := xwin.TerminateJobObject(j.h, exitCode); err != nil {
		return osErr("TerminateJobObject", err)
	}
	return nil
}

func (j nativeJob) ActiveProcesses() (int, error) {
	var info winapi.JobObjectBasicAccountingInformation
	if err := xwin.QueryInformationJobObject(j.h, xwin.JobObjectBasicAccountingInformation,
		uintptr(unsafe.Pointer(&info)), uint32(unsafe.Sizeof(info)), nil); err != nil {
		return 0, osErr("QueryInformationJobObject(BasicAccounting)", err)
	}
	return int(info.ActiveProcesses), nil
}

func (j nativeJob) Close() error { return xwin.CloseHandle(j.h) }
