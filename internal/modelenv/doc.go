// Package modelenv is the one home of the environment that commands run for a model start
// in, and of the Service such commands run on when the caller gives none.
//
// A model cannot answer a pager, an editor or a password prompt, cannot read colour codes,
// and loses output a program keeps in a buffer when the call ends by a timeout. Pipes and
// Terminal list the variables that prevent all of this, for commands whose output goes to
// pipes (the bash executor) and to a terminal (shell sessions): both set NO_COLOR=1,
// PAGER=cat, GIT_PAGER=cat, GH_PAGER=cat, GIT_TERMINAL_PROMPT=0 and PYTHONUNBUFFERED=1 (a
// Python writing to a pipe keeps its output in a block buffer, which a timeout's SIGKILL
// throws away); they differ in TERM and in how git's editor is refused.
//
// Other runtimes were checked for the same trap: Node writes to pipes synchronously on POSIX
// and needs nothing; Ruby's and Perl's stdout buffering (STDOUT.sync, $|) and C's stdio have
// no variable that turns it off (coreutils' stdbuf works through a preloaded library, not a
// variable alone), so nothing is set for them.
//
// StartupVars are the variables that make a bash read a file or change its options before
// the command (BASH_ENV, ENV, SHELLOPTS, BASHOPTS): a Service an adapter makes drops them
// from its environment (WithoutStartup, NewService), and a command spawned on a caller's
// Service gets them set empty (EmptyStartup), so every command starts the same.
//
// NewService makes the default Service of an adapter whose caller gives none, the same way
// for every adapter (a caller's Service says whether it is still open: Service.Err).
package modelenv
