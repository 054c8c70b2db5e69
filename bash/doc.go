// Package bash runs shell commands for a model or a tool the way an agent harness needs: each
// call a fresh bash, bounded in time and output, in a clean environment, never left behind.
//
// An Executor sits on a subprocess Service. Exec runs `bash -c COMMAND` in the foreground: a
// fresh non-login, non-interactive shell that reads no startup file (the host's BASH_ENV, ENV,
// SHELLOPTS and BASHOPTS are dropped), in a process group of its own, with standard input
// from the null device unless the Request gives bytes, which are written and then closed.
// Nothing survives between calls but the file system: there is no shell state.
//
// # Time
//
// A foreground call has a timeout (Config.Timeout, or the Request's, never above
// Config.MaxTimeout). When it expires, or the caller's context ends, the whole group gets
// SIGTERM and, after Config.Grace, SIGKILL: a child that ignores SIGTERM dies too. Exec
// returns once the group is gone, with the output produced until then and TimedOut or
// Cancelled set. When the shell exits while a process it started still holds the output
// pipes (`server &`), the pipes get the same grace to drain and the result settles anyway: a
// daemon never holds a call open. Processes that outlive the shell are listed in the result
// (Lingering, Survivors) and stay owned by the Executor until they exit or Close ends them.
//
// # Output
//
// Each stream keeps its last Config.MaxOutputBytes in memory (errors and summaries come at the
// end) and, once it is longer, the whole stream in a private spill file of up to
// Config.MaxSpillBytes; a longer stream keeps only its tail and loses the file, which would be
// incomplete. Request.StdoutMaxBytes raises one foreground call's stdout budget. A spill path
// is published only when the file was closed without error.
//
// Spill files outlive the call, so the model can read them with the shell, but not forever:
// each Executor keeps them in a private, locked directory under Config.SpillDir, and a
// retention sweep on New, on Close and on Sweep removes files older than Config.SpillMaxAge and
// then the oldest until all fit in Config.SpillMaxTotalBytes. A sweep never touches a file in
// use: one of a running command or of a background Process not yet closed, or one of another
// live Executor (its directory lock is held). It only ever removes what this package created.
//
// # Environment
//
// Commands start from the host environment minus credential-like names and the harness's
// managed prefix (DSH_ by default), scrubbed by the Service. Then come NO_COLOR=1, TERM=dumb,
// PAGER=cat, GIT_PAGER=cat, GH_PAGER=cat, GIT_TERMINAL_PROMPT=0 and GIT_EDITOR=true, so that
// no command waits on a pager, an editor or a password prompt, and PYTHONUNBUFFERED=1, so
// that a Python writing to the output pipes keeps no block buffer a timeout would lose; then
// the Request's Env, which may not use the managed prefix; then its ManagedEnv, which may use
// nothing else.
//
// # Background processes
//
// Start returns a live Process at once, without a timeout. ReadOutput reads both streams by
// whole-stream byte offsets: the Process keeps no cursor, so incremental reads and full
// re-reads coexist, while it runs and after. Terminate, Wait and Close end and collect it.
// At most Config.MaxBackground run at once; Start past that fails with ErrTooMany.
//
// # Text for the model
//
// Render turns a Result (or the error of a call that never ran) into text: the tails with a
// truncation notice that names the spill file and how to read it, the exit status, what is
// still running, and infrastructure failures worded apart from command failures. RenderDelta
// does the same for a background read.
//
// # Configuration and errors
//
// Config carries the reference executor's keys (cwd, timeoutMs, maxTimeoutMs, maxOutputBytes,
// maxSpillBytes, graceMs) with its defaults, plus drainMs, maxBackground, spillDir, spillMaxAgeMs,
// spillMaxTotalBytes, managedPrefix and allowEnv; ParseConfigJSON, ParseConfigYAML and
// LoadConfig read them from a file and refuse unknown keys. Every error wraps one of ErrInvalid,
// ErrNotFound, ErrPermission, ErrClosed, ErrTooMany or ErrUnsupported; a *ConfigError names
// the bad key and a *RequestError the bad field.
//
// The package runs on POSIX systems, where process groups make the tree kill complete. It
// compiles elsewhere, where it is as good as the Service's backend for that system.
package bash
