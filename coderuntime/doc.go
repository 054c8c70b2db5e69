// Package coderuntime runs model-written code (python3, node, bash) and reports what it did.
//
// A Runtime takes a Request (language, code, optional stdin, timeout, environment, output
// budgets) and returns a Result: the exit code or the signal that ended the interpreter,
// whether the run timed out or was cancelled, its duration, the tail of stdout and stderr
// (kept apart, with totals, a truncation flag and an optional spill file), and, when the code
// raised an uncaught exception or had a syntax error, a structured CodeError
// {Name, Value, Traceback}. A code error is a Result, never a Go error: Go errors are for the
// runtime itself (ErrInvalid, ErrUnsupportedLanguage, ErrRuntimeUnavailable, ErrClosed).
//
// SubprocessRuntime is the local implementation, built on subprocess.Service. Each run:
//
//   - resolves its interpreter with Service.ResolveExecutable (overridable per language in
//     Config.Interpreters or per run in Request.Interpreter); a missing one is an
//     *UnavailableError (ErrRuntimeUnavailable) that lists the directories searched;
//   - gets a fresh private directory under the Service's runtime root (0700, code file
//     0600), which is its working directory and is removed before Run returns, whatever
//     the outcome;
//   - runs as its own process tree with stdin from the null device (or the Request's bytes,
//     then end-of-file), the Service's credential-scrubbed environment plus the Request's
//     Env, and each output stream collected as a bounded tail (memory stays bounded
//     whatever the code prints);
//   - ends on exit, on timeout or on ctx's end; a timeout or cancellation terminates the
//     whole tree (SIGTERM, then SIGKILL after the grace), and after any ending whatever the
//     code left running is ended too, including processes that escaped with setsid and hold
//     the output pipes, which cannot hold the result for longer than the grace.
//
// # Structured errors
//
// The code error travels on a side channel, never through the code's stdout or stderr: a
// small prelude, written next to the code in the run's private directory (outside the code's
// working directory), writes one JSON object {name, value, traceback} to an error file in
// that directory when the code ends with an uncaught exception, and the runtime reads it back
// after the run (ignoring it unless it is well-formed and at most 1 MiB).
//
//   - python3 runs prelude.py, which reads main.py, compile()s it (so a syntax error is
//     caught before any line runs) and exec()s it in a fresh __main__ module (sys.argv and
//     sys.path[0] as for `python3 main.py`). SystemExit passes through untouched; any other
//     exception is written to the error file, its traceback (minus the prelude's frames) is
//     printed to stderr as Python would, and the process exits 1. The prelude also flushes
//     stdout and stderr on SIGTERM before dying of it, so a run ended by its timeout keeps
//     what it printed (Python block-buffers a pipe). PYTHONUTF8=1 and PYTHONIOENCODING=utf-8
//     make the streams UTF-8 whatever the host locale.
//   - node runs `node --require prelude.js main.js`: the code is node's ordinary main module
//     (require, __filename, process.argv as usual). The prelude only adds an
//     'uncaughtExceptionMonitor' listener, which node calls for every exception about to end
//     the process, syntax errors of the main module and unhandled rejections included, and
//     which changes nothing about how node reports and exits. An exception the code handles
//     with its own 'uncaughtException' listener is not reported. node's internal frames are
//     cut from the stack.
//   - bash runs `bash main.sh` and has no structured error.
//
// File paths in the Value and Traceback are made relative to the run's work directory
// (main.py, main.js). The traceback python3's prelude prints to stderr reads the same; what
// node prints to stderr is node's own, with absolute paths, passed on unchanged.
//
// # Output
//
// Output.Tail is the end of each stream within the Request's budget. When the stream was
// truncated, the tail never starts in the middle of a UTF-8 character: up to three leading
// continuation bytes (the rest of a character cut at the edge) are dropped. Every other byte
// is kept as the code wrote it; invalid UTF-8 is not replaced (encoding/json turns it into
// U+FFFD when a Result is marshalled).
//
// # Testing an implementation
//
// Package runtimetest holds the contract suite every Runtime must pass:
// runtimetest.Run(t, newRuntime).
package coderuntime
