// Package coderuntime runs model-written code (python3, node, bash) and reports what it did:
// one-shot runs, and code sessions whose state lives from one cell to the next.
//
// Runtime.Run takes a Request (language, code, optional stdin, timeout, environment, output
// budgets) and returns a Result: the exit code or the signal that ended the interpreter,
// whether the run timed out or was cancelled, whether processes it started held its output
// past the drain grace, its duration, the tail of stdout and stderr (kept apart, with totals,
// a truncation flag and an optional spill file), and, when the code raised an uncaught
// exception or had a syntax error, a structured CodeError {Name, Value, Traceback}. A code
// error is a Result, never a Go error: Go errors are for the runtime itself (ErrInvalid,
// ErrUnsupportedLanguage, ErrRuntimeUnavailable, ErrClosed, ErrUnsupported), in one shape
// ("coderuntime: op language: kind: cause (hint)"). ErrClosed, for a closed runtime, session
// or Service, matches subprocess.ErrClosed too.
//
// A Runtime is built on a subprocess.Service: its own, or one the caller owns and shares with
// other adapters (Config.Service), which the runtime then never closes and whose defaults
// (grace, output tail) it takes. Each run:
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
//     code left running is ended too, including processes that escaped with setsid. Processes
//     that hold the output pipes hold the result for the drain grace only
//     (250 ms by default, Config.DrainGrace): the Result then says PipesHeld.
//
// # Sessions
//
// Runtime.NewSession opens a Session (python3 or node; bash sessions are shell
// sessions, in package shell): one long-lived interpreter running a small driver, written in
// the language's standard library only, embedded in this package and written to the session's
// private directory under the runtime root. Session.Run(ctx, Cell, Callbacks) runs one cell in
// the interpreter's state (variables, imports, functions, the working directory) and returns an
// Execution, as Jupyter's execute request does, without a Jupyter server:
//
//   - Results are MIME bundles (text/plain always): the value of a trailing expression is the
//     main result; display(obj) (or display(bundle, raw=True) in python3, display(bundle,
//     {raw: true}) and display.html(...), .png(...) in node) gives more. python3 honours the
//     IPython display protocol (_repr_html_, _repr_png_, ..., _repr_mimebundle_), IPython's
//     own display() when the code imports IPython, and matplotlib: plt.show() and the end of
//     the cell return every open figure as image/png (and close it), whatever the backend:
//     the driver's (MPLBACKEND, unless the environment names another), Agg or another the
//     code chose; a GUI backend that cannot open here gives way to the driver's. What cannot
//     be shown (a figure that fails to render, a GUI backend replaced) is said in the
//     Execution's Notes, with what to do. Nothing of it is imported unless the code does.
//   - Error is the exception that ended the cell, with a traceback naming the cell
//     (<cell-N>, as counted by ExecutionCount) and the code's own frames only, private
//     paths relative. Top-level await works in both languages; in node, what an awaiting
//     cell declares outlives it (node's own REPL rewrite, with --expose-internals).
//   - BackgroundErrors are the uncaught exceptions of code a cell left running, reported
//     with the cell that runs when they are raised (or the next one), each naming the cell
//     whose code started it; that cell keeps its own Error, result and output. In node, every
//     async resource (timer, immediate, tick, promise, socket, ...) is tagged through
//     async_hooks, as it is created, with the count of the cell whose code created it (what
//     a callback schedules takes the callback's tag): an exception a callback throws, or an
//     unhandled rejection (by its promise's tag), is the running cell's Error when the tag is
//     that cell's (or there is none), and a background error of the tagged cell otherwise. So
//     a timer of cell 1 that throws while cell 2 runs is cell 1's, and never takes cell 2's
//     result. In python3, an exception that ends a thread (threading.excepthook) never ends
//     a cell: it is a background error of the cell that started the thread (or started the
//     thread that started it), the running one included; SystemExit ends a thread quietly.
//     A result that code of an earlier cell displays (a node callback, a python3 thread) is
//     among the running cell's Results with FromCell naming that cell; output on stdout and
//     stderr cannot be told apart and stays the running cell's.
//   - Stdout and Stderr stay the code's own file descriptors, collected by the Service with a
//     bounded tail; after each cell the driver writes an end marker (a nonce the code does not
//     know) to both, which the session cuts out, so each Execution holds its own cell's output.
//     Callbacks get the output, the results, the background errors and the error as they
//     come.
//   - Control messages (length-prefixed JSON) travel on a private Unix socket in the session's
//     directory, apart from the output: a cell that floods its output never blocks them, and
//     memory stays bounded whatever it prints.
//   - A cell that outlives its timeout or ctx is interrupted: SIGINT to the interpreter's
//     process group (KeyboardInterrupt in python3; node's interrupted-script error), then a
//     probe. When the probe gets no answer within the grace (native code deaf to SIGINT), the
//     interpreter and every process the cell started are ended, and the next cell runs in a
//     fresh interpreter: the Execution says Restarted. Restart does the same on request.
//
// Sessions need Unix domain sockets (Linux, macOS); on Windows NewSession fails with
// ErrUnsupported. Run one at a time per session: concurrent Runs take turns.
//
// # Structured errors
//
// The code error travels on a side channel, never through the code's stdout or stderr: a
// small prelude, written next to the code in the run's private directory (outside the code's
// working directory), runs first and writes one JSON object {name, value, traceback} to an
// error report when the code ends with an uncaught exception. The host makes the report, a
// file in the code's working directory (which a sandbox keeps writable), and opens it before
// the interpreter starts; the prelude opens it, and removes its name, before any of the code
// runs; after the run the host reads the report only through the descriptor it opened, from
// the file it made, at most 1 MiB of it, and ignores it unless it is well-formed. So nothing
// confined code does to that path (a symbolic link to a file it may not read, a FIFO that
// never ends, a forged report) is ever opened or read by the host.
//
//   - python3 runs the prelude, which reads main.py, compile()s it (so a syntax error is
//     caught before any line runs) and exec()s it in a fresh __main__ module (sys.argv and
//     sys.path[0] as for `python3 main.py`). SystemExit passes through untouched; any other
//     exception is written to the error report, its traceback (minus the prelude's frames) is
//     printed to stderr as Python would, and the process exits 1. The prelude also flushes
//     stdout and stderr on SIGTERM before dying of it, so a run ended by its timeout keeps
//     what it printed (Python block-buffers a pipe). PYTHONUTF8=1 and PYTHONIOENCODING=utf-8
//     make the streams UTF-8 whatever the host locale.
//   - node runs `node --require <prelude> main.js`: the code is node's ordinary main module
//     (require, __filename, process.argv as usual). The prelude adds an 'uncaughtException'
//     listener, which node calls for every exception about to end the process, syntax errors
//     of the main module and unhandled rejections included: it writes the error report, prints
//     the error as node does (the source line and its caret, the stack, the node version) and
//     exits 1, as node does. An exception the code handles with its own 'uncaughtException'
//     listener is left to it and not reported. node's internal frames are cut from the stack
//     of the error report.
//   - bash runs `bash main.sh` and has no structured error.
//
// File paths in the Value and Traceback are made relative to the run's work directory
// (main.py, main.js), and so are they in what the preludes print to stderr: the traceback,
// Python's warnings, node's uncaught errors.
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
// Package runtimetest holds the contract suites every code runtime must pass, this package's
// Runtime as any other: runtimetest.Run(t, newRuntime) and runtimetest.RunSessions(t,
// newRuntime); its Runtime and SessionRuntime interfaces say what they need.
package coderuntime
