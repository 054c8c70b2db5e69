//go:build linux

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/bash"
	"github.com/subkit/subkit/internal/testutil"
)

// killTagged kills, at cleanup, whatever a failed test left carrying tag.
func killTagged(t *testing.T, tag string) {
	t.Cleanup(func() {
		for _, pid := range testutil.Tagged(tag) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
}

// Two HTTP clients are strangers: one cannot list, drive or stop the other's shell sessions,
// code sessions or background processes, neither with the ids the other was given nor with
// ids guessed as counters; what the first holds goes on untouched.
func TestMcpClientsAreStrangers(t *testing.T) {
	h := mcpHTTPStart(t, "")
	a, b := h.session(t).conn(), h.session(t).conn()
	tag := strconv.Itoa(600000 + rand.IntN(300000))
	killTagged(t, tag)

	var sh shellInfoOut
	a.callOK(t, "shell_open", map[string]any{}, &sh)
	var st shellStepOut
	a.callOK(t, "shell_run", map[string]any{"id": sh.ID, "command": "export SECRET=only-a"}, &st)
	var bg bashStartOut
	a.callOK(t, "bash_start", map[string]any{"command": "echo out-of-a; exec sleep " + tag}, &bg)
	var cs codeSessionOut
	a.callOK(t, "code_session_open", map[string]any{"language": "python3"}, &cs)
	var cell cellResult
	a.callOK(t, "code_session_run", map[string]any{"id": cs.ID, "code": "kept = 'a'"}, &cell)
	for _, id := range []string{sh.ID, bg.ID, cs.ID} {
		assert.Len(t, id, 19, "a random id: %s", id)
	}

	var shells shellListOut
	b.callOK(t, "shell_list", map[string]any{}, &shells)
	assert.Empty(t, shells.Sessions, "b sees a's shell")
	var codes codeListOut
	b.callOK(t, "code_session_list", map[string]any{}, &codes)
	assert.Empty(t, codes.Sessions, "b sees a's code session")
	for _, ids := range []struct{ shell, bg, code string }{{sh.ID, bg.ID, cs.ID}, {"1", "1", "1"}, {"0", "2", "2"}} {
		assert.Contains(t, b.callErr(t, "shell_run", map[string]any{"id": ids.shell, "command": "echo $SECRET"}), "no shell session")
		assert.Contains(t, b.callErr(t, "shell_write", map[string]any{"id": ids.shell, "chars": "echo $SECRET\n"}), "no shell session")
		assert.Contains(t, b.callErr(t, "shell_interrupt", map[string]any{"id": ids.shell}), "no shell session")
		assert.Contains(t, b.callErr(t, "shell_close", map[string]any{"id": ids.shell}), "no shell session")
		assert.Contains(t, b.callErr(t, "bash_read", map[string]any{"id": ids.bg}), "no background process")
		assert.Contains(t, b.callErr(t, "bash_stop", map[string]any{"id": ids.bg}), "no background process")
		assert.Contains(t, b.callErr(t, "code_session_run", map[string]any{"id": ids.code, "code": "kept"}), "no code session")
		assert.Contains(t, b.callErr(t, "code_session_restart", map[string]any{"id": ids.code}), "no code session")
		assert.Contains(t, b.callErr(t, "code_session_close", map[string]any{"id": ids.code}), "no code session")
	}
	// b's own ids are its own, and mean nothing to a.
	var shB shellInfoOut
	b.callOK(t, "shell_open", map[string]any{}, &shB)
	assert.NotEqual(t, sh.ID, shB.ID)
	assert.Contains(t, a.callErr(t, "shell_run", map[string]any{"id": shB.ID, "command": "true"}), "no shell session")

	// a's things are untouched.
	text := a.callOK(t, "shell_run", map[string]any{"id": sh.ID, "command": "echo $SECRET"}, &st)
	assert.Contains(t, text, "only-a")
	var rd bashReadOut
	require.Eventually(t, func() bool {
		return a.try("bash_read", map[string]any{"id": bg.ID}, &rd) && rd.Stdout.Data == "out-of-a\n" && len(testutil.Tagged(tag)) == 1
	}, time.Minute, 10*time.Millisecond, "a's background process: %+v", rd)
	assert.True(t, rd.Running)
	a.callOK(t, "code_session_run", map[string]any{"id": cs.ID, "code": "kept"}, &cell)
	require.Len(t, cell.Results, 1)
	assert.Equal(t, "'a'", cell.Results[0].Text)
	a.callOK(t, "shell_list", map[string]any{}, &shells)
	require.Len(t, shells.Sessions, 1)
	assert.Equal(t, sh.ID, shells.Sessions[0].ID)
}

// Background processes are limited per client: one client's 64 running ones (the limit of
// each) do not stop another's bash_start.
func TestMcpBackgroundLimitPerClient(t *testing.T) {
	h := mcpHTTPStart(t, "")
	a, b := h.session(t).conn(), h.session(t).conn()
	tag := strconv.Itoa(600000 + rand.IntN(300000))
	killTagged(t, tag)
	var st bashStartOut
	for range 64 {
		a.callOK(t, "bash_start", map[string]any{"command": "exec sleep " + tag}, &st)
	}
	assert.Contains(t, a.callErr(t, "bash_start", map[string]any{"command": "exec sleep " + tag}), "64")
	b.callOK(t, "bash_start", map[string]any{"command": "exec sleep " + tag}, &st)
	require.Eventually(t, func() bool { return len(testutil.Tagged(tag)) == 65 }, time.Minute, 10*time.Millisecond,
		"running: %d", len(testutil.Tagged(tag)))
}

// The server-wide ceiling (four times a client's limit) is reached only by several clients
// together: with maxBackground 2, four clients run eight, and a fifth is refused.
func TestMcpBackgroundCeiling(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "bash.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("maxBackground: 2\n"), 0o600))
	h := mcpHTTPStart(t, "", "--config", cfg)
	tag := strconv.Itoa(600000 + rand.IntN(300000))
	killTagged(t, tag)
	var st bashStartOut
	for i := range 4 {
		c := h.session(t).conn()
		c.callOK(t, "bash_start", map[string]any{"command": "exec sleep " + tag}, &st)
		c.callOK(t, "bash_start", map[string]any{"command": "exec sleep " + tag}, &st)
		assert.NotContains(t, c.callErr(t, "bash_start", map[string]any{"command": "exec sleep " + tag}), "all clients", "client %d", i)
	}
	text := h.session(t).conn().callErr(t, "bash_start", map[string]any{"command": "exec sleep " + tag})
	assert.Contains(t, text, fmt.Sprintf("all clients of this server together have %d background processes running", 8))
	require.Eventually(t, func() bool { return len(testutil.Tagged(tag)) == 8 }, time.Minute, 10*time.Millisecond,
		"running: %d", len(testutil.Tagged(tag)))
}

// A DELETE is answered at once while the client's call runs (timeout_ms 600000), and
// everything that client started is gone within the grace; another client's are untouched.
func TestMcpDeleteEndsTheClientsWorld(t *testing.T) {
	h := mcpHTTPStart(t, "")
	a, b := h.session(t), h.session(t).conn()
	tag, other := strconv.Itoa(600000+rand.IntN(300000)), strconv.Itoa(600000+rand.IntN(300000))
	killTagged(t, tag)
	killTagged(t, other)
	var st bashStartOut
	a.conn().callOK(t, "bash_start", map[string]any{"command": "exec sleep " + tag}, &st)
	var sh shellInfoOut
	a.conn().callOK(t, "shell_open", map[string]any{}, &sh)
	var step shellStepOut
	a.conn().callOK(t, "shell_run", map[string]any{"id": sh.ID, "command": "sleep " + tag + " &"}, &step)
	b.callOK(t, "bash_start", map[string]any{"command": "exec sleep " + other}, &st)
	called := make(chan error, 1)
	go func() {
		_, err := a.CallTool(context.Background(), &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{
			"command": "sleep " + tag + "; echo done", "timeout_ms": 600000}})
		called <- err
	}()
	require.Eventually(t, func() bool { return len(testutil.Tagged(tag)) == 3 && len(testutil.Tagged(other)) == 1 },
		time.Minute, 5*time.Millisecond, "a's three sleeps and b's one")
	shellPid := sh.Pid

	req, err := http.NewRequest(http.MethodDelete, h.url, nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+h.token)
	req.Header.Set("Mcp-Session-Id", a.ID())
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	answered := time.Since(start)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	assert.Less(t, answered, time.Second, "the DELETE is answered at once")
	require.Eventually(t, func() bool { return len(testutil.Tagged(tag)) == 0 && syscall.Kill(shellPid, 0) != nil },
		time.Minute, 5*time.Millisecond, "left: %v", testutil.Tagged(tag))
	gone := time.Since(start)
	assert.LessOrEqual(t, gone, bash.DefaultGrace, "a's processes are gone within the grace")
	assert.Error(t, <-called, "the call in flight ends with the session")
	t.Logf("DELETE answered in %v; a's processes gone in %v", answered, gone)

	// b goes on.
	var rd bashReadOut
	b.callOK(t, "bash_read", map[string]any{"id": st.ID}, &rd)
	assert.True(t, rd.Running)
	assert.Len(t, testutil.Tagged(other), 1)
	require.Eventually(t, func() bool {
		status, _ := a.raw(t, map[string]string{"Authorization": "Bearer " + h.token}, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`)
		return status == http.StatusNotFound
	},
		time.Minute, 10*time.Millisecond, "a's session is gone")
}

// A session with no request for --session-idle is ended, with everything it started; a call
// that runs longer than that keeps its session.
func TestMcpIdleSessionExpires(t *testing.T) {
	// The idle time leaves the client room to make its first call on a loaded machine (3 s
	// was not enough with four CPU-bound processes on 2 cores).
	h := mcpHTTPStart(t, "", "--session-idle", "8s")
	c := h.session(t)
	tag := strconv.Itoa(600000 + rand.IntN(300000))
	killTagged(t, tag)
	var out bashResult
	c.conn().callOK(t, "bash", map[string]any{"command": "sleep 8.5; echo still-here"}, &out)
	assert.Equal(t, "still-here\n", out.Stdout.Tail, "a call longer than the idle time")
	var st bashStartOut
	c.conn().callOK(t, "bash_start", map[string]any{"command": "exec sleep " + tag}, &st)
	require.Eventually(t, func() bool { return len(testutil.Tagged(tag)) == 1 }, time.Minute, 5*time.Millisecond)
	require.Eventually(t, func() bool { return len(testutil.Tagged(tag)) == 0 }, time.Minute, 10*time.Millisecond,
		"the idle session's background process is gone")
	_, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "true"}})
	assert.Error(t, err, "the expired session is gone")
}

// Language servers and their documents are a client's own: a file a first client has sent
// twice (version 2) is new to a second client's server (version 1).
func TestMcpLspDocumentsPerClient(t *testing.T) {
	fake := lspFake(t)
	root := t.TempDir()
	notes := filepath.Join(root, "notes.txt")
	require.NoError(t, os.WriteFile(notes, []byte("an ERROR here\n"), 0o644))
	h := mcpHTTPStart(t, "", "--lsp", ".txt="+fake)
	a, b := h.session(t).conn(), h.session(t).conn()
	var out lspDiagnosticsOut
	a.callOK(t, "lsp_diagnostics", map[string]any{"files": []any{"notes.txt"}, "root": root}, &out)
	assert.Equal(t, 1, out.Files[0].Version)
	require.NoError(t, os.WriteFile(notes, []byte("fine now\n"), 0o644))
	a.callOK(t, "lsp_diagnostics", map[string]any{"files": []any{"notes.txt"}, "root": root}, &out)
	assert.Equal(t, 2, out.Files[0].Version)
	b.callOK(t, "lsp_diagnostics", map[string]any{"files": []any{"notes.txt"}, "root": root}, &out)
	assert.Equal(t, 1, out.Files[0].Version, "b's server has not seen a's document")
	assert.True(t, out.Files[0].Complete)
	assert.Empty(t, out.Files[0].Diagnostics)
}
