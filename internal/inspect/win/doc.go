// Package win reads the Windows process table: one Toolhelp32 walk per read, and the
// creation time of each process from its process object.
//
// It is the Windows counterpart of packages procinspect/linux and procinspect/darwin, named
// win rather than windows so that its test binary (windows.test) does not clash with
// subprocess/windows's where the test binaries of every package are built into one
// directory (go test -c -o DIR/ ./..., as make vet does).
//
// The assembly of what the walk and the process objects answer ([Assemble], [Judge]) is
// plain Go and builds everywhere, so it is tested on any OS. The readers ([Snapshot],
// [Lookup], [Alive]) exist on windows only.
//
// # The read
//
// Snapshot and Lookup take a precise system time stamp (GetSystemTimePreciseAsFileTime),
// then walk CreateToolhelp32Snapshot (TH32CS_SNAPPROCESS) with Process32First and
// Process32Next, which give for each process its pid, its parent's pid
// (th32ParentProcessID), its thread count (cntThreads) and the executable's file name
// (szExeFile: "cmd.exe", not the path). The walk holds no creation time, so each process
// is then opened with PROCESS_QUERY_LIMITED_INFORMATION and its
// creation time read with GetProcessTimes: the FILETIME (100-nanosecond intervals since
// 1601-01-01 UTC) the kernel stamped at creation and never changes, which is the start token
// of an Identity on Windows. It is the same value package subprocess/windows records for the
// trees it spawns.
//
//   - A process that exited between the walk and its opening (OpenProcess answers
//     ERROR_INVALID_PARAMETER: no such process) is left out, as is one whose creation time is
//     later than the stamp taken before the walk: its pid was reused in between, and the
//     process the walk listed is gone.
//   - A process that exists but cannot be opened (ERROR_ACCESS_DENIED: a protected process,
//     or another user's without the privilege) keeps Start 0, with Record.StartErr saying why.
//     So does pid 0, the System Idle Process, which has no process object to open.
//
// The parent pid is the creator's pid at creation time. Windows never re-parents a process:
// once the creator exits, its pid can be handed to a newer, unrelated process, and the
// stale link then points at it. Package procinspect fences such links by start time (a child
// never started before its parent), which a Start of 0 cannot satisfy: a process that
// could not be opened is never counted as the child of one that could.
//
// Using x/sys/windows directly rather than gopsutil (which is in the module): gopsutil's
// process list gives no parent or creation time without a Toolhelp walk or an open per
// process per call, and converts the creation time to milliseconds, which drops the
// precision that tells apart two processes created in the same millisecond with one pid.
//
// # Alive
//
// Alive opens the one process (PROCESS_QUERY_LIMITED_INFORMATION and SYNCHRONIZE) and
// compares its creation time, then asks whether it has exited (WaitForSingleObject with a
// zero timeout): a process object outlives its process as long as some handle holds it.
// Where SYNCHRONIZE is refused it opens the process again without it and asks
// GetExitCodeProcess instead, which cannot tell a process that exited with status 259
// (STILL_ACTIVE) from a live one.
//
// # Zombies
//
// A process that exited while a handle still holds its object has no threads; if the walk
// lists it (cntThreads 0), Record.Zombie reports it. Wine 8.0's walk leaves such processes
// out altogether.
package win
