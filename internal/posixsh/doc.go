// Package posixsh is the kit's command shell where no bash is installed (Windows without Git
// Bash): the POSIX and bash interpreter of mvdan.cc/sh, run as a role of the kit's helper
// executable. A command is then still one process tree that the Service spawns (on Windows,
// in a job object of its own): the programs the script runs are the helper's children, and
// ending the tree ends them, its tails, timeouts and spill files unchanged.
//
// What it is not: bash. It has bash's syntax (arrays, [[ ]], $(( )), functions, pipes,
// redirections, here-documents, set -e/-u/-o pipefail) and the builtins a script needs (cd,
// echo, printf, read, test, export, source, wait, ...), but no external utilities of its own:
// ls, grep, cat or sed run only where the machine has them on PATH (Git for Windows'
// usr/bin, BusyBox, MSYS2), and Windows' own programs (where, findstr, cmd /c dir) work as
// anywhere. Job control, traps on signals other than EXIT and ERR, and process
// substitution on Windows are not offered; an unsupported construct is a clear error, exit 2.
package posixsh
