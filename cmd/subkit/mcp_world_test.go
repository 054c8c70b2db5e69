//go:build linux

package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	var cell cellOut
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
