package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
)

// --sandbox confines what every tool starts: a command writes only in the writable roots,
// and the result says which backend enforced.
func TestMcpSandbox(t *testing.T) {
	dir, outside := t.TempDir(), testutil.DirOutsideTmp(t, "outside-")
	c := mcpStart(t, "inprocess", "--sandbox", "--writable", dir)
	var out bashResult
	c.callOK(t, "bash", map[string]any{"command": "touch " + dir + "/ok; touch " + outside + "/x-outside"}, &out)
	require.NotNil(t, out.Sandbox)
	assert.NotEmpty(t, out.Sandbox.Backend)
	assert.Equal(t, "off", out.Sandbox.Network)
	assert.FileExists(t, filepath.Join(dir, "ok"))
	assert.NoFileExists(t, filepath.Join(outside, "x-outside"))
	assert.NotEqual(t, 0, *out.ExitCode, "the refused touch fails the command")

	// Shell sessions and code run under the same policy.
	var info shellInfoOut
	c.callOK(t, "shell_open", map[string]any{}, &info)
	var st shellStepOut
	c.callOK(t, "shell_run", map[string]any{"id": info.ID, "command": "touch " + outside + "/from-shell"}, &st)
	assert.NotEqual(t, 0, *st.ExitCode)
	var run codeResult
	text := c.callOK(t, "code_run", map[string]any{"language": "python3", "code": fmt.Sprintf("open(%q, 'w')", outside+"/from-code")}, &run)
	// (The structured error is lost under a sandbox whose writable roots leave out the code's
	// working directory, where the code runtime writes its error file; the traceback on stderr
	// says it.)
	assert.Regexp(t, `PermissionError: \[Errno 13\] Permission denied|OSError: \[Errno 30\] Read-only file system`, text)
	assert.Equal(t, 1, *run.ExitCode)
	assert.NoFileExists(t, filepath.Join(outside, "from-shell"))
	assert.NoFileExists(t, filepath.Join(outside, "from-code"))

	// The config file's sandbox block does the same.
	cfg := filepath.Join(t.TempDir(), "bash.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("sandbox:\n  writable: ["+dir+"]\n"), 0o600))
	c2 := mcpStart(t, "inprocess", "--config", cfg)
	c2.callOK(t, "bash", map[string]any{"command": "touch " + outside + "/x2"}, &out)
	require.NotNil(t, out.Sandbox)
	assert.NoFileExists(t, filepath.Join(outside, "x2"))
}

// subkit mcp killed with SIGKILL in the middle of a call leaves nothing of what it started:
// the guard ends the command's tree, the setsid daemon and the child with a cleared
// environment included.
func TestMcpKilledServerLeavesNothing(t *testing.T) {
	tag := strconv.Itoa(600000 + rand.IntN(300000))
	t.Cleanup(func() {
		for _, pid := range testutil.Tagged(tag) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	tmp := t.TempDir()
	cmd := exec.Command(os.Args[0], "mcp")
	cmd.Env = append(os.Environ(), asCLIVar+"=1", "TMPDIR="+tmp)
	client := mcp.NewClient(&mcp.Implementation{Name: "subkit-test"}, nil)
	sess, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	called := make(chan error, 1)
	go func() {
		_, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{
			"command": fmt.Sprintf("setsid sleep %[1]s & env -i /bin/sleep %[1]s & sleep %[1]s", tag)}})
		called <- err
	}()
	require.Eventually(t, func() bool { return len(testutil.Tagged(tag)) == 3 }, time.Minute, 5*time.Millisecond,
		"the command's three sleeps did not start")
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	assert.Error(t, <-called, "the call fails with the connection")
	assert.Error(t, sess.Close(), "the server was killed: its exit status says so")
	require.Eventually(t, func() bool { return len(testutil.Tagged(tag)) == 0 }, time.Minute, 10*time.Millisecond,
		"survivors: %v", testutil.Tagged(tag))
	require.Eventually(t, func() bool {
		roots, _ := filepath.Glob(filepath.Join(tmp, "subkit-runtime-*"))
		return len(roots) == 0
	}, 10*time.Second, 10*time.Millisecond, "the runtime root is left behind")
}

// lsp_diagnostics reads only regular files: a symbolic link to a secret and a FIFO that no one
// writes, put in the workspace by a confined program, are refused, neither read nor waited on.
func TestMcpLspRefusesLinksAndFIFOs(t *testing.T) {
	c := mcpStart(t, "inprocess")
	dir := t.TempDir()
	link, fifo := filepath.Join(dir, "secret.go"), filepath.Join(dir, "pipe.go")
	require.NoError(t, os.Symlink("/etc/hostname", link))
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	for _, f := range []string{link, fifo} {
		text := c.callErr(t, "lsp_diagnostics", map[string]any{"files": []any{f}, "server": []any{"/bin/true"}})
		assert.Contains(t, text, "not a regular file", f)
	}
}

// code_run under --sandbox: the code replaces the path of its error report with a symbolic
// link to a hidden file (whose content would pass for a report) or with a FIFO no one writes,
// then raises. The server reads neither: the call returns, its answer carries nothing of the
// file, and the exception the code raised is reported.
func TestMcpCodeRunHostReadsNothing(t *testing.T) {
	mark := "SECRET-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	secret := filepath.Join(testutil.DirOutsideTmp(t, "secret-"), "report.json")
	require.NoError(t, os.WriteFile(secret, []byte(`{"name": "`+mark+`", "value": "`+mark+`", "traceback": "`+mark+`"}`), 0o600))
	c := mcpStart(t, "inprocess", "--sandbox", "--hidden", secret)
	const findReport = "import os, sys\nf = sys._getframe()\n" +
		"while f is not None and '_SUBKIT_ERROR' not in f.f_globals:\n    f = f.f_back\n" +
		"report = f.f_globals['_SUBKIT_ERROR']\ntry:\n    os.unlink(report)\nexcept OSError:\n    pass\n"
	for name, plant := range map[string]string{
		"symlink": "os.symlink(" + strconv.Quote(secret) + ", report)\n",
		"fifo":    "os.mkfifo(report)\n",
	} {
		t.Run(name, func(t *testing.T) {
			type answer struct {
				res *mcp.CallToolResult
				err error
			}
			done := make(chan answer, 1)
			go func() {
				res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "code_run", Arguments: map[string]any{
					"language": "python3", "code": findReport + plant + "print('planted', flush=True)\nraise RuntimeError('after planting')\n"}})
				done <- answer{res, err}
			}()
			var a answer
			select {
			case a = <-done:
			case <-time.After(2 * time.Minute): // only a server that opens the planted FIFO hangs
				t.Fatal("code_run did not return: the server opened what the code planted")
			}
			require.NoError(t, a.err)
			text := mcpText(a.res)
			b, err := json.Marshal(a.res.StructuredContent)
			require.NoError(t, err)
			assert.NotContains(t, text, mark)
			assert.NotContains(t, string(b), mark)
			var out codeResult
			require.NoError(t, json.Unmarshal(b, &out))
			assert.Equal(t, "planted\n", out.Stdout.Tail, text)
			if assert.NotNil(t, out.Error, "the exception is reported: %s", text) {
				assert.Equal(t, "RuntimeError", out.Error.Name)
				assert.Equal(t, "after planting", out.Error.Value)
			}
		})
	}
}

// --sandbox --network allow: the bash tool reaches the allowed host and nothing else, and the
// answer's sandbox object says what the proxy refused.
func TestMcpSandboxNetworkAllow(t *testing.T) {
	allowed := hostHTTP(t)
	c := mcpStart(t, "inprocess", "--sandbox", "--network", "allow", "--allow", allowed)
	var out bashResult
	text := c.callOK(t, "bash", map[string]any{"command": "curl -sS --max-time 30 http://" + allowed + "/; curl -sS --max-time 30 http://refused.invalid/"}, &out)
	require.NotNil(t, out.Sandbox, text)
	assert.Equal(t, "allow", out.Sandbox.Network)
	assert.Contains(t, text, "ALLOWED-BODY")
	assert.Contains(t, text, "refused.invalid:80 is not in the network allow-list")
	require.Len(t, out.Sandbox.NetworkRefused, 1, text)
	assert.Contains(t, out.Sandbox.NetworkRefused[0], "refused.invalid:80")
}
