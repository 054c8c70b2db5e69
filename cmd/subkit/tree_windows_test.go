package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/proctest"
)

// TestTreeNode is where the nodes of the tree tests' process trees run: the test binary
// re-run with -test.run=TestTreeNode and proctest.Var set. Run as a test, it does nothing.
func TestTreeNode(t *testing.T) { proctest.Main() }

// subkitExeVar names a subkit.exe built for Windows (make test-windows sets it); without it
// the test binary plays subkit.exe (asCLIVar).
const subkitExeVar = "SUBKIT_WINE_SUBKIT_EXE"

// subkit tree on Windows, of a tree with children, a cmd.exe below each and a node below
// that: in-process with --json and as text, as a subkit.exe process of its own, and
// process_tree over the same tree.
func TestTreeWindows(t *testing.T) {
	tr := proctest.Start(t, "2,c1", "-test.run=TestTreeNode")
	require.Len(t, tr.Procs, 7)
	pid := strconv.Itoa(tr.Root)

	code, out, errOut := cli(t, "", "tree", "--json", pid)
	require.Equal(t, 0, code, errOut)
	entries := decode[[]treeProc](t, out)
	checkTreeEntries(t, tr, entries)

	// The text: PID, PPID and the command indented by depth (a cmd.exe is at depth 2).
	depth := func(pid int) int {
		d := 0
		for ; pid != tr.Root; pid = tr.Procs[pid].PPid {
			d++
		}
		return d
	}
	want := "PID      PPID     COMMAND\n"
	for _, e := range entries {
		want += fmt.Sprintf("%-8d %-8d %s%s\n", e.Pid, e.PPid, strings.Repeat("  ", depth(e.Pid)), e.Comm)
	}
	code, out, _ = cli(t, "", "tree", pid)
	require.Equal(t, 0, code)
	assert.Equal(t, want, out)
	assert.Equal(t, 2, strings.Count(out, "    cmd.exe\n"), "%s", out)

	// subkit.exe tree PID as a process of its own.
	cmd := subkitCommand(t, "tree", "--json", pid)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	require.NoError(t, err, "%s: %s", cmd.Path, stderr.String())
	fromExe := decode[[]treeProc](t, string(stdout))
	checkTreeEntries(t, tr, fromExe)
	assert.Equal(t, entries, fromExe, "both read the same tree")

	// process_tree answers the same.
	text, tree, err := (*mcpWorld)(nil).processTreeTool(context.Background(), nil, processTreeIn{Pid: tr.Root})
	require.NoError(t, err)
	assert.Equal(t, tr.Root, tree.Root)
	require.Len(t, tree.Processes, 7)
	for i, p := range tree.Processes {
		assert.Equal(t, entries[i].Pid, p.Pid)
		assert.Equal(t, entries[i].Start, p.Start)
		assert.Equal(t, depth(p.Pid), p.Depth, "%+v", p)
		assert.False(t, p.Zombie)
	}
	assert.Equal(t, want, text)

	tr.Stop(t)
	code, out, _ = cli(t, "", "tree", "--json", pid)
	assert.Equal(t, exitFailure, code)
	assert.Equal(t, "not_found", decode[errorOutput](t, out).Error.Kind)
}

// checkTreeEntries checks subkit tree's JSON against what the tree's nodes reported: every
// process once, the root first, each after its parent, with its parent, name and a creation
// time not before its parent's; no groups or sessions on Windows.
func checkTreeEntries(t *testing.T, tr *proctest.Tree, entries []treeProc) {
	t.Helper()
	require.Len(t, entries, len(tr.Procs))
	assert.Equal(t, tr.Root, entries[0].Pid)
	start := map[int]uint64{}
	for _, e := range entries {
		want, ok := tr.Procs[e.Pid]
		require.True(t, ok, "%d is not of the tree", e.Pid)
		assert.Equal(t, want.PPid, e.PPid, "parent of %d", e.Pid)
		assert.True(t, strings.EqualFold(want.Name, e.Comm), "name of %d: %q, want %q", e.Pid, e.Comm, want.Name)
		assert.NotZero(t, e.Start)
		assert.Zero(t, e.Pgid)
		assert.Zero(t, e.Sid)
		assert.Zero(t, e.Tpgid)
		if e.Pid != tr.Root {
			ps, seen := start[e.PPid]
			require.True(t, seen, "%d comes after its parent %d", e.Pid, e.PPid)
			assert.GreaterOrEqual(t, e.Start, ps)
		}
		start[e.Pid] = e.Start
	}
}

// process_tree of `subkit mcp` on Windows, over stdio from a real server process (subkit.exe
// mcp, or the test binary as it): the tree of a given pid with depths, and by default the
// server's own.
func TestTreeWindowsMcp(t *testing.T) {
	tr := proctest.Start(t, "1,c1", "-test.run=TestTreeNode")
	require.Len(t, tr.Procs, 4)

	sess, cmd, stderr := mcpExe(t)
	ctx := context.Background()
	defer func() {
		assert.NoError(t, sess.Close())
		assert.Equal(t, 0, cmd.ProcessState.ExitCode(), "subkit mcp's exit status; stderr: %s", stderr)
	}()
	call := func(args map[string]any) (string, processTreeOut) {
		t.Helper()
		res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "process_tree", Arguments: args})
		require.NoError(t, err)
		require.NotEmpty(t, res.Content)
		text := res.Content[0].(*mcp.TextContent).Text
		require.False(t, res.IsError, "%s", text)
		b, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		var out processTreeOut
		require.NoError(t, json.Unmarshal(b, &out))
		return text, out
	}

	text, tree := call(map[string]any{"pid": tr.Root})
	assert.Equal(t, tr.Root, tree.Root)
	require.Len(t, tree.Processes, 4)
	for i, p := range tree.Processes {
		want, ok := tr.Procs[p.Pid]
		require.True(t, ok, "%d is not of the tree", p.Pid)
		assert.Equal(t, want.PPid, p.PPid)
		assert.True(t, strings.EqualFold(want.Name, p.Comm), "%q, want %q", p.Comm, want.Name)
		assert.Equal(t, i, p.Depth, "a chain: root, node, cmd.exe, node")
		assert.NotZero(t, p.Start)
	}
	assert.True(t, strings.HasPrefix(text, "PID      PPID     COMMAND\n"), "%s", text)
	assert.Contains(t, text, "    cmd.exe\n")

	_, self := call(map[string]any{})
	assert.Equal(t, cmd.Process.Pid, self.Root)
	require.NotEmpty(t, self.Processes)
	assert.Equal(t, cmd.Process.Pid, self.Processes[0].Pid)
}

// mcpExe connects an MCP client over stdio to subkit.exe mcp (see subkitCommand), whose
// stderr goes to the buffer it returns. Closing the session ends the server; the cleanup
// closes it if the test did not.
func mcpExe(t *testing.T) (*mcp.ClientSession, *exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := subkitCommand(t, "mcp")
	stderr := &bytes.Buffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "subkit-test", Version: "1"}, nil)
	sess, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err, "stderr: %s", stderr)
	t.Cleanup(func() { sess.Close() })
	return sess, cmd, stderr
}

// subkitCommand is subkit.exe with args: the cross-built one that subkitExeVar names, else
// the test binary as the CLI.
func subkitCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	exe, env := os.Getenv(subkitExeVar), os.Environ()
	if exe == "" {
		var err error
		exe, err = os.Executable()
		require.NoError(t, err)
		env = append(env, asCLIVar+"=1")
	}
	t.Logf("subkit as a process of its own: %s", exe)
	cmd := exec.Command(exe, args...)
	cmd.Env = env
	return cmd
}
