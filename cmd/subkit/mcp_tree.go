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

type processTreeOut struct {
	Root      int        `json:"root"`
	Processes []treeProc `json:"processes" jsonschema:"the root first, each process after its parent"`
	Omitted   int        `json:"omitted" jsonschema:"descendants left out beyond 2000"`
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
	out := processTreeOut{Root: pid}
	if len(procs) > mcpMaxTreeProcs {
		out.Omitted = len(procs) - mcpMaxTreeProcs
		procs = procs[:mcpMaxTreeProcs]
	}
	out.Processes = treeOf(procs)
	var b strings.Builder
	b.WriteString(treeHeader())
	for i, w := range out.Processes {
		b.WriteString(treeLine(procs[i], w.Depth, zombieMark(w.Zombie)))
	}
	if out.Omitted > 0 {
		fmt.Fprintf(&b, "[%d more descendants are left out]\n", out.Omitted)
	}
	return b.String(), out, nil
}
