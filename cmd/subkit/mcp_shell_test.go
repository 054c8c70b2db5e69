//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The middle of a 200 kB step, which the step leaves out, is read back by offset with
// shell_read: its one error line included.
func TestMcpShellReadTranscript(t *testing.T) {
	c := mcpStart(t, "inprocess")
	var info shellInfoOut
	text := c.callOK(t, "shell_open", map[string]any{}, &info)
	require.NotEmpty(t, info.TranscriptPath)
	assert.Contains(t, text, "its whole transcript goes to "+info.TranscriptPath)
	var st shellStepOut
	text = c.callOK(t, "shell_run", map[string]any{"id": info.ID,
		"command": `for i in $(seq 1 10000); do echo "line $i"; done; echo "ERROR: the one line"; for i in $(seq 10001 20000); do echo "line $i"; done`}, &st)
	require.Equal(t, "completed", st.State)
	require.Positive(t, st.Omitted)
	assert.False(t, strings.Contains(st.Output, "ERROR"), "the step leaves the middle out")
	assert.Contains(t, text, `shell_read {"id":"`+info.ID+`","offset":`)

	var found bool
	var rd shellReadOut
	for off := st.OmittedFrom; off < st.OmittedFrom+st.Omitted && !found; off = rd.Next {
		text = c.callOK(t, "shell_read", map[string]any{"id": info.ID, "offset": off, "max_bytes": 50000}, &rd)
		require.Equal(t, off, rd.From)
		require.Zero(t, rd.Dropped)
		require.Greater(t, rd.Next, rd.From)
		found = strings.Contains(rd.Text, "\nERROR: the one line\n")
	}
	assert.True(t, found, "the error line, read back from the middle")
	assert.Contains(t, text, "[transcript bytes ")

	assert.Contains(t, c.callErr(t, "shell_read", map[string]any{"id": info.ID, "offset": -1}), "offset")
	assert.Contains(t, c.callErr(t, "shell_read", map[string]any{"id": info.ID, "offset": 1 << 40}), "outside the transcript")
	assert.Contains(t, c.callErr(t, "shell_read", map[string]any{"id": "nope"}), "no shell session")
}

// shell_terminate ends a foreground program that ignores Ctrl-C and SIGTERM; the shell stays.
func TestMcpShellTerminate(t *testing.T) {
	c := mcpStart(t, "inprocess")
	var info shellInfoOut
	c.callOK(t, "shell_open", map[string]any{}, &info)
	var st shellStepOut
	c.callOK(t, "shell_run", map[string]any{"id": info.ID, "command": `bash -c 'trap "" INT TERM; sleep 1000'`, "yield_ms": 100}, &st)
	for st.Foreground != "sleep" {
		c.callOK(t, "shell_poll", map[string]any{"id": info.ID, "yield_ms": 50}, &st)
		require.NotEqual(t, "completed", st.State)
	}
	text := c.callOK(t, "shell_terminate", map[string]any{"id": info.ID}, &st)
	assert.Equal(t, "completed", st.State)
	require.NotNil(t, st.ExitCode)
	assert.Equal(t, 137, *st.ExitCode)
	assert.Contains(t, text, "SIGKILL was sent")
	text = c.callOK(t, "shell_run", map[string]any{"id": info.ID, "command": "echo still here"}, &st)
	assert.Contains(t, text, "still here\n")
}
