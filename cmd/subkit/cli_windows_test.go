package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/procinspect"
)

// The tests of this file run subkit.exe (make test-windows cross-builds it and runs them under
// Wine) as a user would: exec, version and mcp over stdio with its process and language-server
// tools.

// runExe runs subkit.exe with args and returns its exit status, stdout and stderr.
func runExe(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := subkitCommand(t, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("%s: %v", cmd.Path, err)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// subkit.exe exec: a program's status and streams in text and JSON, a program not found, and a
// timeout that ends a tree whose grandchild (ping.exe) would otherwise run for minutes.
func TestExecWindowsExe(t *testing.T) {
	code, out, errOut := runExe(t, "", "exec", "--", "cmd", "/c", "echo hi& echo oops 1>&2& exit /b 3")
	assert.Equal(t, 3, code, "the program's status")
	assert.Equal(t, "hi\r\n", out)
	assert.Contains(t, errOut, "oops")

	code, out, errOut = runExe(t, "", "exec", "--json", "--", "cmd", "/c", "echo hi& exit /b 3")
	require.Equal(t, 0, code, errOut)
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	assert.EqualValues(t, 3, res["exit_code"])
	assert.Equal(t, "hi\r\n", res["stdout"].(map[string]any)["tail"])

	code, _, errOut = runExe(t, "", "exec", "--", "no-such-program-here")
	assert.Equal(t, exitNotFound, code, errOut)
	assert.Contains(t, errOut, "no-such-program-here")

	code, out, errOut = runExe(t, "", "exec", "--json", "--timeout", "2s", "--grace", "500ms", "--",
		"cmd", "/c", "ping -n 1000 127.0.0.1 >nul")
	require.Equal(t, 0, code, errOut)
	res = map[string]any{}
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	assert.Equal(t, true, res["timed_out"], out)
	pid := int(res["pid"].(float64))
	if p, err := procinspect.Lookup(context.Background(), pid); err == nil {
		assert.NotEqual(t, "cmd.exe", strings.ToLower(p.Comm), "cmd.exe %d outlived its timeout", pid)
	}
	for _, p := range snapshotWindows(t) {
		assert.NotEqual(t, pid, p.PPid, "a child of the ended cmd.exe is left: %+v", p)
	}
}

// subkit.exe version --json names Windows and its row of the support matrix.
func TestVersionWindowsExe(t *testing.T) {
	code, out, errOut := runExe(t, "", "version", "--json")
	require.Equal(t, 0, code, errOut)
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &v), out)
	assert.Equal(t, "Windows", v["platform"])
	assert.NotEmpty(t, v["support"])
	code, _, _ = runExe(t, "", "version", "extra")
	assert.Equal(t, exitUsage, code)
}

// subkit.exe mcp over stdio answers lsp_diagnostics with a language server it starts (the
// fake server, and gopls.exe when make test-windows built one: a type error in a Go file), and
// when the client leaves, the servers are gone with it.
func TestMcpLspWindowsExe(t *testing.T) {
	fake := os.Getenv("SUBKIT_LSP_FAKESERVER")
	if fake == "" {
		t.Skip("SUBKIT_LSP_FAKESERVER names no cross-built fake language server (make test-windows builds one)")
	}
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "notes.txt"), []byte("all good\nan ERROR here\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/m\n\ngo 1.22\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "main.go"), []byte("package main\n\nfunc main() {\n\tvar x int = \"s\"\n\t_ = x\n}\n"), 0o644))

	sess, cmd, stderr := mcpExe(t)
	call := func(args map[string]any) string {
		t.Helper()
		text, isErr := callText(t, sess, "lsp_diagnostics", args)
		require.False(t, isErr, "%s", text)
		return text
	}
	text := call(map[string]any{"files": []string{"notes.txt"}, "root": root, "server": []string{fake}})
	assert.Contains(t, text, "notes.txt:2:4: error: found ERROR")

	var servers []string
	servers = append(servers, strings.ToLower(filepath.Base(fake)))
	if gopls := os.Getenv("SUBKIT_GOPLS"); gopls != "" {
		text = call(map[string]any{"files": []string{"main.go"}, "root": root, "server": []string{gopls}, "wait_ms": 300000})
		assert.Contains(t, text, "main.go:4:14: error:", "%s", text)
		assert.Contains(t, text, `cannot use "s"`, "%s", text)
		servers = append(servers, strings.ToLower(filepath.Base(gopls)))
		t.Logf("gopls.exe: %s", text)
	}

	server := cmd.Process.Pid
	children := func() []procinspect.Proc {
		var left []procinspect.Proc
		for _, p := range snapshotWindows(t) {
			for _, s := range servers {
				if strings.ToLower(p.Comm) == s && p.PPid == server {
					left = append(left, p)
				}
			}
		}
		return left
	}
	require.NotEmpty(t, children(), "the language servers run as subkit mcp's children")
	require.NoError(t, sess.Close())
	assert.Equal(t, 0, cmd.ProcessState.ExitCode(), "subkit mcp's exit status; stderr: %s", stderr)
	assert.Empty(t, children(), "language servers left after subkit mcp ended")
}

// callText calls tool and returns its text and whether it is a tool error.
func callText(t *testing.T, sess *mcp.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	require.NoError(t, err)
	require.NotEmpty(t, res.Content)
	return res.Content[0].(*mcp.TextContent).Text, res.IsError
}

// snapshotWindows is this machine's process table.
func snapshotWindows(t *testing.T) []procinspect.Proc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tab, err := procinspect.Snapshot(ctx)
	require.NoError(t, err)
	return tab.Procs()
}

// subkit.exe bash and mcp's bash tool on Windows: without Git Bash (as under Wine) the
// commands run in the kit's own shell, one tree each, with the exit status and the timeout.
func TestBashWindowsExe(t *testing.T) {
	code, out, errOut := runExe(t, "", "bash", "--json", `echo "hi $((6*7))"; exit 3`)
	require.Equal(t, 0, code, errOut)
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	assert.EqualValues(t, 3, res["exit_code"], out)
	assert.Equal(t, "hi 42\n", res["stdout"].(map[string]any)["tail"])

	sess, _, _ := mcpExe(t)
	call := func(args map[string]any) string {
		t.Helper()
		text, _ := callText(t, sess, "bash", args)
		return text
	}
	text := call(map[string]any{"command": `for i in 1 2; do echo "line $i"; done; exit 3`})
	assert.Contains(t, text, "line 1\nline 2\n")
	assert.Contains(t, text, "exit code 3")
	text = call(map[string]any{"command": "echo working; ping -n 1000 127.0.0.1 >/dev/null", "timeout_ms": 2000})
	assert.Contains(t, text, "working")
	assert.Contains(t, text, "timed out after 2s", "%s", text)
}
