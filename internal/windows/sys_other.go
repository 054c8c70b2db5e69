//go:build !windows

package windows

import "fmt"

// NativeSys returns, off Windows, calls that all fail with ErrUnsupported: the package's logic
// compiles and is tested everywhere, its OS calls exist only on Windows.
func NativeSys() Sys { return unsupportedSys{} }

// DefaultRunner returns, off Windows, a runner with no taskkill.exe: Run fails with
// ErrTaskkillMissing.
func DefaultRunner() Runner { return ExecRunner{} }

type unsupportedSys struct{}

func unsupported(call string) error { return fmt.Errorf("%s: %w", call, ErrUnsupported) }

func (unsupportedSys) CreateJob() (Job, error)              { return nil, unsupported("CreateJobObject") }
func (unsupportedSys) ProcessStart(uintptr) (uint64, error) { return 0, unsupported("GetProcessTimes") }
func (unsupportedSys) Resume(uintptr) error                 { return unsupported("NtResumeProcess") }
func (unsupportedSys) Exited(uintptr) (bool, error)         { return false, unsupported("WaitForSingleObject") }
func (unsupportedSys) OpenProcess(int) (Process, error)     { return nil, unsupported("OpenProcess") }
func (unsupportedSys) CtrlBreak(int) error                  { return unsupported("GenerateConsoleCtrlEvent") }
