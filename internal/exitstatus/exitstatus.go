// Package exitstatus is the subkit command's exit-status table: the statuses every command
// exits with, and the table's two renderings from the one list of rows, the text each
// command's -h prints (Text) and the Markdown table of the README (Markdown, written between
// markers by go generate in cmd/subkit).
package exitstatus

import (
	"strconv"
	"strings"
)

// The statuses of the subkit command.
const (
	Failure     = 1
	Usage       = 2
	Timeout     = 124 // as timeout(1)
	NotExec     = 126
	NotFound    = 127
	SignalShift = 128 // 128+N: a signal N ended the program
	Cancelled   = 130 // interrupted, as a shell's after Ctrl-C
)

// Row is one status and what it means. Meaning marks code with backquotes, as Markdown does;
// Text drops them.
type Row struct {
	Status  string
	Meaning string
}

// Table is the exit-status table, the same for every command.
var Table = []Row{
	{"N", "the program's own status (text mode; under `--json`: 0 once it has run, its status is in the JSON)"},
	{strconv.Itoa(SignalShift) + "+N", "a signal N ended the program (text mode)"},
	{strconv.Itoa(Timeout), "the timeout (`--timeout`) ended it (text mode)"},
	{strconv.Itoa(Cancelled), "interrupted: a first Ctrl-C (or SIGTERM, SIGHUP) ends the tree with the grace, a second one at once with SIGKILL; every JSON result has `\"cancelled\"`"},
	{strconv.Itoa(NotExec), "the program cannot be executed"},
	{strconv.Itoa(NotFound), "the program (or interpreter) was not found"},
	{strconv.Itoa(Usage), "bad usage: flags, arguments, configuration, a `--dir` that is not a directory"},
	{strconv.Itoa(Failure), "any other failure"},
}

// ErrorKinds says what a failure looks like under --json.
const ErrorKinds = "Under `--json` every failure is `{\"error\":{\"kind\",\"message\"}}`: kind is invalid, " +
	"not_found, permission, unsupported, cancelled or internal (lsp adds failed, timeout, server_exited, " +
	"protocol, shutdown and diagnostics_timeout)."

// Text is the table as each command's -h prints it, lines wrapped at 100 columns.
func Text() string {
	var b strings.Builder
	b.WriteString("Exit status, the same for every command:\n")
	for _, r := range Table {
		head := "  " + r.Status + strings.Repeat(" ", max(1, 8-len(r.Status)))
		b.WriteString(wrap(head, strings.Repeat(" ", len(head)), plain(r.Meaning)))
	}
	b.WriteString(wrap("", "", plain(ErrorKinds)))
	return b.String()
}

// Markdown is the table as the README shows it.
func Markdown() string {
	var b strings.Builder
	b.WriteString("| status | meaning |\n|---|---|\n")
	for _, r := range Table {
		b.WriteString("| " + r.Status + " | " + r.Meaning + " |\n")
	}
	b.WriteString("\n" + ErrorKinds + "\n")
	return b.String()
}

// plain drops the Markdown code marks.
func plain(s string) string { return strings.ReplaceAll(s, "`", "") }

// wrap is text's words after first, on lines of at most 100 columns; later lines start with
// indent.
func wrap(first, indent, text string) string {
	const width = 100
	var b strings.Builder
	line := first
	fresh := true
	for _, w := range strings.Fields(text) {
		if !fresh && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line, fresh = indent, true
		}
		if !fresh {
			line += " "
		}
		line += w
		fresh = false
	}
	b.WriteString(line + "\n")
	return b.String()
}
