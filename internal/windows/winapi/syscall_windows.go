package winapi

// The //sys lines name types of golang.org/x/sys/windows; the generated file imports it.

// NtResumeProcess resumes every thread of a process. The process was created with
// CREATE_SUSPENDED, and os/exec closes the handle of its main thread (golang/go #17245), so
// ResumeThread is not available; this undocumented but long-stable ntdll export is what
// Windows' own tools use. The handle needs PROCESS_SUSPEND_RESUME access.
//
//sys	NtResumeProcess(process windows.Handle) (ntstatus error) = ntdll.NtResumeProcess

// JobObjectBasicAccountingInformation is JOBOBJECT_BASIC_ACCOUNTING_INFORMATION, read with
// windows.QueryInformationJobObject and windows.JobObjectBasicAccountingInformation. Its layout
// is the same on every architecture (64-bit integers first, then 32-bit ones).
type JobObjectBasicAccountingInformation struct {
	TotalUserTime             int64
	TotalKernelTime           int64
	ThisPeriodTotalUserTime   int64
	ThisPeriodTotalKernelTime int64
	TotalPageFaultCount       uint32
	TotalProcesses            uint32
	ActiveProcesses           uint32
	TotalTerminatedProcesses  uint32
}
