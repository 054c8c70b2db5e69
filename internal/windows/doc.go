// Package windows is the Windows backend of the subprocess Service: it puts every spawned tree
// in a job object of its own, ends the tree with TerminateJobObject (or, when the job route is
// refused, with `taskkill /PID <pid> /T /F` fenced by the leader's identity), and tells when the
// tree has no member left.
//
// # Routes
//
// The Service starts the leader with SysProcAttr (CREATE_SUSPENDED | CREATE_NEW_PROCESS_GROUP)
// and hands the started process to Attach, which, holding the leader's handle
// (os.Process.WithHandle):
//
//  1. records the leader's identity: pid + creation FILETIME (GetProcessTimes);
//  2. creates a job object with JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE and assigns the leader to
//     it. The leader has not run a single instruction yet, so no grandchild can escape the job
//     (assigning after a normal start lets fast grandchildren escape);
//  3. resumes the leader with NtResumeProcess (os/exec closes the main thread's handle, so
//     ResumeThread is out of reach: golang/go #17245).
//
// When the job is created and the leader assigned, the tree takes the job route: Kill is
// TerminateJobObject, liveness is the job's ActiveProcesses count, and the tree dies with the
// host, because the host holds the only handle to the job. When creating or assigning is
// refused (an old Windows without nested jobs, a parent job that forbids it), the tree takes
// the taskkill route: Kill runs `taskkill /PID <pid> /T /F` through the injectable Runner, and
// liveness is the direct child only. Before taskkill runs, the leader's pid is opened and its
// creation time compared with the one recorded at spawn; the handle stays open while taskkill
// runs, so the number cannot be reused under it. A pid whose creation time changed is never
// killed. taskkill /T follows parent pids from the leader, so it cannot reach descendants
// whose leader has already exited: the taskkill route is best effort by nature.
//
// # Graceful stop
//
// Windows has no SIGTERM. Term sends CTRL_BREAK_EVENT to the leader's process group (the
// leader was started with CREATE_NEW_PROCESS_GROUP) while the leader still runs, which reaches
// console programs that share this process's console. Where it cannot be sent (no console, the
// leader has exited) Term returns nil and the Service's Terminate goes on to Kill after its
// grace. Interrupt is the same request with its failure reported. The event is never sent to
// group 0 (every process on the console, this one included) nor once the leader has exited
// (a pid that is not a live group leader must not be addressed).
//
// # Outcomes
//
// Nothing here panics or throws: every outcome comes back as an error wrapping one of the
// sentinels (ErrAccessDenied, ErrIdentityChanged, ErrIdentityUnknown, ErrTaskkillMissing,
// ErrTaskkillFailed, ErrJobRefused, ErrNoProcess, ErrUnsupported) inside an *Error that names
// the operation, route and pid. A tree already gone is not an error: taskkill's "not found"
// (exit 128 with that text) counts as gone, but exit 128 with "Access is denied" does not.
//
// # Testing
//
// Every decision (which route, how a taskkill outcome is classified, the identity fence, the
// fallback, the Ctrl-Break guards) lives in untagged files and reaches the OS only through the
// small interfaces Sys, Job, Process, Runner and Leader, so tests on any OS drive each route
// through fakes. Only the *_windows.go files bind those interfaces to real calls; their tests
// (tree_windows_test.go) run on Windows and, through `make test-windows`, under Wine 8.0 on
// Linux: the job route, the identity read at Attach, an emptied job. Two cannot pass under Wine
// and skip there, naming the gap: the taskkill route (Wine's taskkill rejects /T) and Ctrl-Break
// delivery (no console, and Wine does not deliver the event to a child). Elsewhere NativeSys
// reports ErrUnsupported for every call.
package windows
