package windows

import "context"

// Sys is the set of OS calls the backend makes outside a job. NativeSys binds it to the real
// calls; tests substitute fakes. Handles are raw process handles as os.Process.WithHandle
// passes them; they are only used while the caller holds them.
type Sys interface {
	// CreateJob creates an unnamed job object whose processes are killed when its last handle
	// is closed (JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE).
	CreateJob() (Job, error)
	// ProcessStart returns the creation time (FILETIME, 100 ns ticks since 1601) of the
	// process behind handle.
	ProcessStart(handle uintptr) (uint64, error)
	// Resume resumes every thread of the suspended process behind handle.
	Resume(handle uintptr) error
	// Exited reports whether the process behind handle has exited.
	Exited(handle uintptr) (bool, error)
	// OpenProcess opens pid for querying. While the returned Process is open, Windows does not
	// give the number to another process. A pid with no process gives an error wrapping
	// ErrNoProcess.
	OpenProcess(pid int) (Process, error)
	// CtrlBreak sends CTRL_BREAK_EVENT to the console process group pgid.
	CtrlBreak(pgid int) error
}

// Job is one job object.
type Job interface {
	// Assign puts the process behind handle into the job.
	Assign(handle uintptr) error
	// Terminate ends every process in the job with exitCode.
	Terminate(exitCode uint32) error
	// ActiveProcesses is the number of processes in the job that have not exited
	// (JobObjectBasicAccountingInformation).
	ActiveProcesses() (int, error)
	// Close releases the handle; with KILL_ON_JOB_CLOSE that kills what is left in the job.
	Close() error
}

// Process is an open handle to a process found by pid.
type Process interface {
	// Start returns the process's creation time, as Sys.ProcessStart does.
	Start() (uint64, error)
	// Close releases the handle (and with it the hold on the pid).
	Close() error
}

// Runner runs taskkill.exe with args. It returns the combined output and the exit code; err is
// non-nil only when the program could not be started or waited for (a missing binary, ctx
// done), and a non-zero exit code is not an error. ExecRunner is the real one.
type Runner interface {
	Run(ctx context.Context, args []string) (output []byte, exitCode int, err error)
}

// Leader is the tree's first process as the backend needs it; *os.Process satisfies it.
type Leader interface {
	// WithHandle calls f with a handle that refers to the process until f returns. It fails
	// once the process has been waited for.
	WithHandle(f func(handle uintptr)) error
	// Kill ends the process.
	Kill() error
}
