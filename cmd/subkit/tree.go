package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"

	"github.com/subkit/subkit/procinspect"
)

const treeUsage = `usage: subkit tree [--json] PID

Prints the process PID and its descendants, read from one snapshot of the process table.
A child counts only if it started no earlier than its parent, so a reused pid never adopts
another process's children. With --json:
[{"pid","ppid","pgid","sid","tpgid","start","comm","depth","zombie"}], the root first, each
process after its parent ("depth": 0 for the root, 1 for its children, ...); "start" is the raw start token (Linux: clock
ticks since boot; macOS: microseconds since the epoch; Windows: the creation FILETIME, 0 for
a process that cannot be opened). Windows has no process groups or sessions: there pgid, sid
and tpgid are 0, and the text lists PID, PPID and COMMAND. A PID that does not exist is kind
not_found, exit 1.

flags:
`

func cmdTree(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tree", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print JSON")
	fail := func(kind string, code int, err error) int {
		return reportError(stdout, stderr, *asJSON, "tree", kind, code, err)
	}
	if help, err := parseFlags(fs, args, treeUsage, stdout); help {
		return 0
	} else if err != nil {
		return fail("invalid", exitUsage, err)
	}
	if fs.NArg() != 1 {
		return fail("invalid", exitUsage, errors.New("want exactly one PID: subkit tree [--json] PID"))
	}
	pid, err := strconv.Atoi(fs.Arg(0))
	if err != nil || pid <= 0 {
		return fail("invalid", exitUsage, fmt.Errorf("%q is not a pid", fs.Arg(0)))
	}
	tab, err := procinspect.Snapshot(ctx)
	if err != nil {
		if errors.Is(err, procinspect.ErrUnsupported) {
			return fail("unsupported", exitFailure, err)
		}
		return fail("internal", exitFailure, err)
	}
	root, ok := tab.Get(pid)
	if !ok {
		return fail("not_found", exitFailure, fmt.Errorf("no process %d", pid))
	}
	procs := append([]procinspect.Proc{root}, tab.Descendants(root.Identity)...)
	if *asJSON {
		writeJSON(stdout, treeOf(procs))
		return 0
	}
	fmt.Fprint(stdout, treeHeader())
	for i, w := range treeOf(procs) {
		fmt.Fprint(stdout, treeLine(procs[i], w.Depth, zombieMark(w.Zombie)))
	}
	return 0
}

// treeGroups says whether this OS has process groups and sessions to show (Windows has
// neither: its Proc's Pgid and Sid are 0).
const treeGroups = runtime.GOOS != "windows"

// treeHeader is the header line of a tree's text, for `subkit tree` and process_tree.
func treeHeader() string {
	if treeGroups {
		return fmt.Sprintf("%-8s %-8s %-8s %s\n", "PID", "PGID", "SID", "COMMAND")
	}
	return fmt.Sprintf("%-8s %-8s %s\n", "PID", "PPID", "COMMAND")
}

// treeLine is p's line in a tree's text, indented by depth, suffix after its command.
func treeLine(p procinspect.Proc, depth int, suffix string) string {
	indent := strings.Repeat("  ", depth)
	if treeGroups {
		return fmt.Sprintf("%-8d %-8d %-8d %s%s%s\n", p.Pid, p.Pgid, p.Sid, indent, p.Comm, suffix)
	}
	return fmt.Sprintf("%-8d %-8d %s%s%s\n", p.Pid, p.PPid, indent, p.Comm, suffix)
}

// zombieMark is the suffix of a zombie's line in a tree's text.
func zombieMark(zombie bool) string {
	if zombie {
		return " <zombie>"
	}
	return ""
}
