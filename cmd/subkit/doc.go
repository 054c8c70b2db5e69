// Command subkit runs processes the way the subkit library does, so a newcomer can try it
// from a shell.
//
//	subkit exec [flags] -- PROGRAM [ARGS...]   run one process tree, print its result
//	subkit tree [--json] PID                   show a process and its descendants
//	subkit term [flags] -- PROGRAM [ARGS...]   run a program on a pty, interactively or scripted
//	subkit bash [flags] 'COMMAND'              run one command with the bash executor
//	subkit lsp [flags] -- SERVER [ARGS...]     talk to a language server, then shut it down
//	subkit code --lang L [flags] (CODE | -)    run model-written code
//
// Exit status of subkit itself: 2 for bad flags or a bad spec, 127 when the program is not
// found, 126 when it cannot be executed, 1 for any other failure of subkit. Otherwise see each
// command.
package main
