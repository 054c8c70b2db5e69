//go:build linux

package main

import (
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTree(t *testing.T) {
	cmd := exec.Command("bash", "-c", "sleep 1000 & sleep 1000 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); cmd.Wait() })
	pid := strconv.Itoa(cmd.Process.Pid)

	var entries []treeProc
	require.Eventually(t, func() bool {
		code, out, _ := cli(t, "", "tree", "--json", pid)
		require.Equal(t, 0, code)
		entries = decode[[]treeProc](t, out)
		return len(entries) == 3 && entries[1].Comm == "sleep" && entries[2].Comm == "sleep"
	}, 5*time.Second, 20*time.Millisecond)
	assert.Equal(t, cmd.Process.Pid, entries[0].Pid)
	assert.Equal(t, "bash", entries[0].Comm)
	for _, e := range entries[1:] {
		assert.Equal(t, cmd.Process.Pid, e.PPid)
		assert.Equal(t, cmd.Process.Pid, e.Pgid)
		assert.GreaterOrEqual(t, e.Start, entries[0].Start)
	}

	code, out, _ := cli(t, "", "tree", pid)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "  sleep")

	code, _, errOut := cli(t, "", "tree", "notapid")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "not a pid")
	code, _, errOut = cli(t, "", "tree", "999999999")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "no process")

	// Under --json the errors are JSON too.
	code, out, _ = cli(t, "", "tree", "--json", "999999999")
	assert.Equal(t, exitFailure, code)
	assert.Equal(t, "not_found", decode[errorOutput](t, out).Error.Kind)
	code, out, _ = cli(t, "", "tree", "--json", "notapid")
	assert.Equal(t, exitUsage, code)
	assert.Equal(t, "invalid", decode[errorOutput](t, out).Error.Kind)
}
