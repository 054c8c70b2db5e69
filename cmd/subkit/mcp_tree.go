package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subkit/subkit/procinspect"
)

type processTreeIn struct {
	Pid int `json:"pid,omitempty" jsonschema:"the root process (default: this server, so the tree shows everything the server runs)"`
}

type treeProcOut struct {
	Pid    int    `json:"pid"`
	PPid   int    `json:"ppid"`
	Pgid   int    `json:"pgid" jsonschema:"process group (0 on Windows, which has none)"`
	Sid    int    `json:"sid" jsonschema:"session (0 on Windows, which has none)"`
	Start  uint64 `json:"start" jsonschema:"the raw start token (Linux: clock ticks since boot; macOS: microseconds since the epoch; Windows: the creation FILETIME, 0 for a process that cannot be opened); pid and start name a process exactly"`
	Comm   string `json:"comm" jsonschema:"the command name"`
	Depth  int    `json:"depth" jsonschema:"0 for the root, 1 for its children, ..."`
	Zombie bool   `json:"zombie" jsonschema:"exited, waiting to be reaped (Windows: exited, its process object still held by a handle)"`
}

type processTreeOut struct {
	Root      int           `json:"root"`
	Processes []treeProcOut `json:"processes" jsonschema:"the root first, each process after its parent"`
	Omitted   int           `json:"omitted" jsonschema:"descendants left out beyond 2000"`
}

func (s *mcpServer) addTreeTools(server *mcp.Server) {
	addTool(s, server, &mcp.Tool{Name: "process_tree", Title: "Show a process tree",
		Description: "Lists a process and its descendants from one snapshot of the process table (a child counts only if it " +
			"started after its parent, so a reused pid adopts no one). Without a pid: this server, whose tree holds every " +
			"command, shell, interpreter and language server it runs.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
	}, (*mcpWorld).processTreeTool)
}

func (*mcpWorld) processTreeTool(ctx context.Context, _ *mcp.CallToolRequest, in processTreeIn) (string, processTreeOut, error) {
	pid := in.Pid
	switch {
	case pid < 0:
		return "", processTreeOut{}, fmt.Errorf("[request refused: pid %d is negative; omit it for this server]", pid)
	case pid == 0:
		pid = os.Getpid()
	}
	tab, err := procinspect.Snapshot(ctx)
	if err != nil {
		if errors.Is(err, procinspect.ErrUnsupported) {
			return "", processTreeOut{}, fmt.Errorf("[unsupported here: %v]", err)
		}
		return "", processTreeOut{}, fmt.Errorf("[tool failure: reading the process table: %v]", err)
	}
	root, ok := tab.Get(pid)
	if !ok {
		return "", processTreeOut{}, fmt.Errorf("[no process %d]", pid)
	}
	procs := append([]procinspect.Proc{root}, tab.Descendants(root.Identity)...)
	out := processTreeOut{Root: pid, Processes: []treeProcOut{}}
	if len(procs) > mcpMaxTreeProcs {
		out.Omitted = len(procs) - mcpMaxTreeProcs
		procs = procs[:mcpMaxTreeProcs]
	}
	depth := map[int]int{}
	var b strings.Builder
	b.WriteString(treeHeader())
	for _, p := range procs {
		d := 0
		if p.Pid != root.Pid {
			d = depth[p.PPid] + 1
		}
		depth[p.Pid] = d
		out.Processes = append(out.Processes, treeProcOut{Pid: p.Pid, PPid: p.PPid, Pgid: p.Pgid, Sid: p.Sid, Start: p.Start,
			Comm: p.Comm, Depth: d, Zombie: p.Zombie})
		z := ""
		if p.Zombie {
			z = " <zombie>"
		}
		b.WriteString(treeLine(p, d, z))
	}
	if out.Omitted > 0 {
		fmt.Fprintf(&b, "[%d more descendants are left out]\n", out.Omitted)
	}
	return b.String(), out, nil
}
