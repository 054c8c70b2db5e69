//go:build unix

package main

import (
	"context"
	"math/rand/v2"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/procinspect"
)

// bgChild starts cmd with bash_start, the command printing the pid of the process whose
// exit it then reports ("$!" as the first line), and returns the background id and that
// process as process_tree lists it.
func (c *mcpConn) bgChild(t *testing.T, cmd string) (string, treeProc) {
	t.Helper()
	var st bashStartOut
	c.callOK(t, "bash_start", map[string]any{"command": cmd}, &st)
	var rd bashReadOut
	for !strings.Contains(rd.Stdout.Data, "\n") {
		c.callOK(t, "bash_read", map[string]any{"id": st.ID, "wait_ms": 60000}, &rd)
		require.True(t, rd.Running, "%+v", rd)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(rd.Stdout.Data))
	require.NoError(t, err, "%q", rd.Stdout.Data)
	var tree processTreeOut
	c.callOK(t, "process_tree", map[string]any{}, &tree)
	i := slices.IndexFunc(tree.Processes, func(p treeProc) bool { return p.Pid == pid })
	require.GreaterOrEqual(t, i, 0, "pid %d in %+v", pid, tree)
	return st.ID, tree.Processes[i]
}

// readToEnd follows a background process with bash_read until it has ended and returns its
// whole stdout.
func (c *mcpConn) readToEnd(t *testing.T, id string) string {
	t.Helper()
	var rd bashReadOut
	for !rd.Done {
		c.callOK(t, "bash_read", map[string]any{"id": id, "wait_ms": 60000}, &rd)
	}
	return rd.Stdout.Data
}

// process_kill ends a grandchild a background command started, named by pid and start:
// a wrong start token is refused and signals nothing, the right one ends it by SIGTERM (the
// command goes on and reports it), and a second call finds it gone.
func TestMcpProcessKill(t *testing.T) {
	for _, mode := range mcpModes {
		t.Run(mode, func(t *testing.T) {
			c := mcpStart(t, mode)
			tag := strconv.Itoa(600000 + rand.IntN(300000))
			id, p := c.bgChild(t, "sleep "+tag+" & echo $!; wait $!; echo \"sleep ended: $?\"")
			assert.Equal(t, "sleep", p.Comm)

			msg := c.callErr(t, "process_kill", map[string]any{"pid": p.Pid, "start": p.Start + 1})
			assert.Contains(t, msg, "pid was reused")
			assert.Contains(t, msg, "nothing was signalled")
			alive, err := procinspect.Alive(context.Background(), procinspect.Identity{Pid: p.Pid, Start: p.Start})
			require.NoError(t, err)
			assert.True(t, alive, "a wrong start token signals nothing")

			var out processKillOut
			text := c.callOK(t, "process_kill", map[string]any{"pid": p.Pid, "start": p.Start}, &out)
			assert.Equal(t, processKillOut{Pid: p.Pid, Start: p.Start, Comm: "sleep", Outcome: "ended", Signal: "SIGTERM"}, out)
			assert.Equal(t, "[process "+strconv.Itoa(p.Pid)+" (sleep) ended by SIGTERM]\n", text)
			assert.Equal(t, strconv.Itoa(p.Pid)+"\nsleep ended: 143\n", c.readToEnd(t, id), "the command saw its child end by SIGTERM")

			c.callOK(t, "process_kill", map[string]any{"pid": p.Pid, "start": p.Start}, &out)
			assert.Equal(t, "gone", out.Outcome)
			assert.Empty(t, out.Signal)
		})
	}
}

// A process that ignores SIGTERM is ended by SIGKILL once the grace is over.
func TestMcpProcessKillAfterGrace(t *testing.T) {
	c := mcpStart(t, "inprocess")
	tag := strconv.Itoa(600000 + rand.IntN(300000))
	id, p := c.bgChild(t, "(trap '' TERM; exec sleep "+tag+") & echo $!; wait $!; echo \"ended: $?\"")
	var out processKillOut
	text := c.callOK(t, "process_kill", map[string]any{"pid": p.Pid, "start": p.Start, "grace_ms": 200}, &out)
	assert.Equal(t, "ended", out.Outcome)
	assert.Equal(t, "SIGKILL", out.Signal)
	assert.Contains(t, text, "did not exit within 200ms of SIGTERM; ended by SIGKILL")
	assert.Equal(t, strconv.Itoa(p.Pid)+"\nended: 137\n", c.readToEnd(t, id))

	// SIGKILL asked for: at once.
	id, p = c.bgChild(t, "sleep "+tag+" & echo $!; wait $!; echo \"ended: $?\"")
	c.callOK(t, "process_kill", map[string]any{"pid": p.Pid, "start": p.Start, "signal": "kill"}, &out)
	assert.Equal(t, "SIGKILL", out.Signal)
	assert.Equal(t, strconv.Itoa(p.Pid)+"\nended: 137\n", c.readToEnd(t, id))
}

// process_kill refuses, signalling nothing: a pid that is no process id, a missing start, an
// unknown signal, the server itself, pid 1, a process the test started (outside the
// server's tree) and, on Linux, the kit's guard.
func TestMcpProcessKillRefuses(t *testing.T) {
	c := mcpStart(t, "process")
	ctx := context.Background()
	for _, pid := range []int{0, -5} {
		assert.Contains(t, c.callErr(t, "process_kill", map[string]any{"pid": pid, "start": 1}), "is not a process id")
	}
	assert.Contains(t, c.callErr(t, "process_kill", map[string]any{"pid": 12345, "start": 0}), "start is missing")
	assert.Contains(t, c.callErr(t, "process_kill", map[string]any{"pid": 12345, "start": 1, "signal": "SIGSTOP"}), "is not one of")
	assert.Contains(t, c.callErr(t, "process_kill", map[string]any{"pid": 12345, "start": 1, "grace_ms": -1}), "negative")

	server, err := procinspect.Lookup(ctx, c.pid)
	require.NoError(t, err)
	assert.Contains(t, c.callErr(t, "process_kill", map[string]any{"pid": c.pid, "start": server.Start}), "is this server")
	init, err := procinspect.Lookup(ctx, 1)
	require.NoError(t, err)
	assert.Contains(t, c.callErr(t, "process_kill", map[string]any{"pid": 1, "start": init.Start}), "is the system's init")

	tag := strconv.Itoa(600000 + rand.IntN(300000))
	own := exec.Command("sleep", tag)
	require.NoError(t, own.Start())
	defer func() { own.Process.Kill(); own.Wait() }()
	p, err := procinspect.Lookup(ctx, own.Process.Pid)
	require.NoError(t, err)
	msg := c.callErr(t, "process_kill", map[string]any{"pid": p.Pid, "start": p.Start})
	assert.Contains(t, msg, "is not one this server started")
	assert.Contains(t, msg, "bash_stop")
	alive, err := procinspect.Alive(ctx, p.Identity)
	require.NoError(t, err)
	assert.True(t, alive, "a process outside the server's tree is not signalled")

	if runtime.GOOS == "linux" {
		// The guard: the server's child that every tree hangs from (started by the first spawn).
		_, bg := c.bgChild(t, "sleep "+tag+" & echo $!; wait")
		var tree processTreeOut
		c.callOK(t, "process_tree", map[string]any{}, &tree)
		i := slices.IndexFunc(tree.Processes, func(q treeProc) bool {
			return q.PPid == c.pid && slices.ContainsFunc(tree.Processes, func(r treeProc) bool { return r.PPid == q.Pid })
		})
		require.GreaterOrEqual(t, i, 0, "%+v", tree)
		g := tree.Processes[i]
		assert.Contains(t, c.callErr(t, "process_kill", map[string]any{"pid": g.Pid, "start": g.Start}), "guard")
		var out processKillOut
		c.callOK(t, "process_kill", map[string]any{"pid": bg.Pid, "start": bg.Start, "grace_ms": 5000}, &out)
		assert.Equal(t, "ended", out.Outcome)
	}
}

// The same terminal bytes read the same in every tool's text: bash, bash_read, shell_run,
// code_run and code_session_run, while the structured stream fields keep the bytes.
func TestMcpRenderSame(t *testing.T) {
	c := mcpStart(t, "inprocess")
	const cmd = `printf 'a\r\033[32mb\033[0m\0c\n'`
	const want = "b␀c\n"

	var res bashResult
	text := c.callOK(t, "bash", map[string]any{"command": cmd}, &res)
	assert.Equal(t, want+"[exit code 0]\n", text)
	assert.Equal(t, "a\r\x1b[32mb\x1b[0m\x00c\n", res.Stdout.Tail, "the structured tail keeps the bytes")

	var st bashStartOut
	c.callOK(t, "bash_start", map[string]any{"command": cmd}, &st)
	var rd bashReadOut
	for !rd.Done {
		text = c.callOK(t, "bash_read", map[string]any{"id": st.ID, "wait_ms": 60000}, &rd)
	}
	assert.True(t, strings.HasPrefix(text, want), "bash_read: %q", text)

	var info shellInfoOut
	c.callOK(t, "shell_open", map[string]any{}, &info)
	var step shellStepOut
	text = c.callOK(t, "shell_run", map[string]any{"id": info.ID, "command": cmd}, &step)
	assert.True(t, strings.HasPrefix(text, want), "shell_run: %q", text)
	assert.Equal(t, want, step.Output)
	c.callOK(t, "shell_close", map[string]any{"id": info.ID}, nil)

	var code codeResult
	text = c.callOK(t, "code_run", map[string]any{"language": "bash", "code": cmd}, &code)
	assert.Equal(t, want+"[exit code 0]\n", text)

	var sess codeSessionOut
	c.callOK(t, "code_session_open", map[string]any{"language": "python3"}, &sess)
	var cell cellResult
	text = c.callOK(t, "code_session_run", map[string]any{"id": sess.ID, "code": `print("a\r\x1b[32mb\x1b[0m\x00c")`}, &cell)
	assert.True(t, strings.HasPrefix(text, want), "code_session_run: %q", text)
	c.callOK(t, "code_session_close", map[string]any{"id": sess.ID}, nil)
}
