package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/subkit/subkit/procinspect"
)

const treeUsage = `usage: subkit tree [--json] PID

Prints the process PID and its descendants, read from one snapshot of the process table.
A child counts only if it started no earlier than its parent, so a reused pid never adopts
another process's children. With --json: [{"pid","ppid","pgid","sid","tpgid","start","comm"}],
the root first, each process after its parent; "start" is the raw start token (Linux: clock
ticks since boot). Exit status: 0, 1 when PID does not exist or the table cannot be read,
2 for bad arguments.
`

type treeEntry struct {
	Pid   int    `json:"pid"`
	PPid  int    `json:"ppid"`
	Pgid  int    `json:"pgid"`
	Sid   int    `json:"sid"`
	Tpgid int    `json:"tpgid"`
	Start uint64 `json:"start"`
	Comm  string `json:"comm"`
}

func cmdTree(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tree", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, treeUsage)
			return 0
		}
		fmt.Fprintf(stderr, "subkit tree: %v\n%s", err, treeUsage)
		return exitUsage
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "subkit tree: want exactly one PID\n%s", treeUsage)
		return exitUsage
	}
	pid, err := strconv.Atoi(fs.Arg(0))
	if err != nil || pid <= 0 {
		fmt.Fprintf(stderr, "subkit tree: %q is not a pid\n", fs.Arg(0))
		return exitUsage
	}
	tab, err := procinspect.Snapshot(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "subkit tree: %v\n", err)
		return exitFailure
	}
	root, ok := tab.Get(pid)
	if !ok {
		fmt.Fprintf(stderr, "subkit tree: no process %d\n", pid)
		return exitFailure
	}
	procs := append([]procinspect.Proc{root}, tab.Descendants(root.Identity)...)
	if *asJSON {
		out := make([]treeEntry, len(procs))
		for i, p := range procs {
			out[i] = treeEntry{p.Pid, p.PPid, p.Pgid, p.Sid, p.Tpgid, p.Start, p.Comm}
		}
		writeJSON(stdout, out)
		return 0
	}
	depth := map[int]int{root.Pid: 0}
	fmt.Fprintf(stdout, "%-8s %-8s %-8s %s\n", "PID", "PGID", "SID", "COMMAND")
	for _, p := range procs {
		if p.Pid != root.Pid {
			depth[p.Pid] = depth[p.PPid] + 1
		}
		fmt.Fprintf(stdout, "%-8d %-8d %-8d %s%s\n", p.Pid, p.Pgid, p.Sid, strings.Repeat("  ", depth[p.Pid]), p.Comm)
	}
	return 0
}
