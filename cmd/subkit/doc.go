// Command subkit runs processes the way the subkit library does, so a newcomer can try it
// from a shell.
//
//	subkit exec [flags] -- PROGRAM [ARGS...]   run one process tree, print its result
//	subkit tree [--json] PID                   show a process and its descendants
//	subkit term [flags] -- PROGRAM [ARGS...]   run a program on a pty, interactively or scripted
//	subkit bash [flags] 'COMMAND'              run one command with the bash executor
//	subkit lsp [flags] -- SERVER [ARGS...]     talk to a language server, then shut it down
//	subkit code --lang L [flags] (CODE | -)    run model-written code, or cells in one session
//	subkit shell --script FILE [flags]         run a script's lines in one stateful shell session
//	subkit mcp [flags]                         serve the kit's tools over the Model Context Protocol
//	subkit --version | version [--json]        the version and this platform's support row
//
// One exit-status table holds for every command (internal/exitstatus: printed by each -h, and
// written into the README by go generate): the program's status, 128+N by signal, 124
// timeout, 130 interrupted (a second Ctrl-C kills at once), 126 not executable, 127 not found,
// 2 bad usage, 1 other.
package main
