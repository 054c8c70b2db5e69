// Package runtimetest is the contract suite every code runtime (a Runtime: coderuntime.Runtime
// or another implementation) must pass. An implementation calls Run from one of its own tests:
//
//	func TestContract(t *testing.T) {
//		runtimetest.Run(t, func(t *testing.T) runtimetest.Runtime {
//			rt, err := mypkg.New(mypkg.Config{ /* temp dirs inside t.TempDir() */ })
//			require.NoError(t, err)
//			return rt
//		})
//	}
//
// What the suite needs from an implementation, and nothing more:
//
//   - newRuntime returns a fresh, open Runtime each time it is called (once per subtest). The
//     suite closes it twice at the end of the subtest (Close must be safe twice); the
//     implementation may close it again in a cleanup of its own.
//   - The Runtime's base environment is the host's as of the newRuntime call, minus what it
//     scrubs: the suite sets SecretVar in the host environment (t.Setenv) before each call and
//     checks the code never sees it.
//   - Request.Env reaches the code. The suite marks every run with a variable in it to find
//     leaked processes, and passes its own variables that way.
//   - Request.Interpreter, set to a name or path that does not exist, makes Run fail with an
//     error wrapping coderuntime.ErrRuntimeUnavailable whose message names it.
//   - With Request.Dir empty, the code's working directory is a private directory (0700, the
//     code file 0600, on POSIX) that is gone when Run returns.
//   - Languages lists what Run can run now. The language cases run for python3, node and bash
//     as far as listed (at least one must be); structured errors are checked for python3 and
//     node. The snippets expect UTF-8 streams and, on POSIX, a shell toolbox (sleep, head, tr,
//     setsid for bash's escape case, which is skipped without it).
//   - Cancellation mid-run yields a Result with Cancelled set and a nil error; a ctx already
//     ended before Run is an error wrapping ctx.Err().
//   - Go errors wrap the coderuntime sentinels: ErrInvalid for a bad Request (negative
//     durations or budgets, an Env entry without '=', no Language), ErrUnsupportedLanguage,
//     ErrRuntimeUnavailable, ErrClosed for Run after Close.
//
// Every subtest checks that nothing is left behind: no process carrying the run's mark (on
// Linux, read from /proc, right after each Run and again at the end), no file descriptor of
// the test process, no goroutine (runtime.NumGoroutine, compared with a retry loop), and no
// working directory of a run it could observe. Timing bounds are the Request's timeout and
// grace plus Slack, plus the time an "ok" run takes for cases that cannot exclude startup.
//
// RunSessions is the contract of sessions, for implementations of SessionRuntime:
//
//	func TestSessionContract(t *testing.T) {
//		runtimetest.RunSessions(t, func(t *testing.T) runtimetest.SessionRuntime { ... })
//	}
//
// It runs for python3 and node as far as SessionLanguages lists them (at least one must be;
// bash must not be), each case in a fresh runtime and session: state and execution counts
// across cells, the trailing expression as the main result, display(), errors with a traceback
// naming the cell and no private path, each cell's own output, callbacks that see the first line
// while the cell still runs (the cell waits for a file the callback creates), an interrupted busy
// loop that keeps the state, cancellation, a cell blocked in native code deaf to SIGINT that
// restarts the interpreter and ends the process it started, 100 MB of output with the heap
// bounded (sampled), Restart, the working directory across cells, an interpreter that exits,
// top-level await, node's unhandled rejection, an uncaught exception of code an earlier cell
// left running (a node timer, a python3 thread) reported as a background error naming that
// cell while the running cell keeps its result, the scrubbed environment, concurrent Runs that
// take turns, Close during a cell, and bad input. Sessions must accept SessionConfig.Env (the
// suite marks processes through it) and the Grace and budgets it sets.
//
// The suite sets environment variables, so neither it nor its parents may call t.Parallel;
// it runs its cases one after the other (the concurrency case runs 8 runs at once inside one
// subtest). It takes about 30 s for the three languages of the subprocess runtime.
package runtimetest
