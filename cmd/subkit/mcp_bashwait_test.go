//go:build unix

package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
)

// writeFIFO writes line to the FIFO at path once a reader has opened it.
func writeFIFO(t *testing.T, path, line string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(line)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}

// A bash call that outlives its wait is not killed: the answer names the background process
// it goes on as, with its output so far; bash_list lists it, bash_read until exit waits for its
// end in one call, and its whole output reads back from offset 0 and as a tail.
func TestMcpBashOutlivesWait(t *testing.T) {
	for _, mode := range mcpModes {
		t.Run(mode, func(t *testing.T) {
			c := mcpStart(t, mode)
			fifo := filepath.Join(t.TempDir(), "go-on")
			require.NoError(t, syscall.Mkfifo(fifo, 0o600))
			var out bashOut
			text := c.callOK(t, "bash", map[string]any{"command": "echo before; echo warn >&2; read -r x < " + fifo + "; echo after $x; exit 3",
				"wait_ms": 300}, &out)
			require.NotNil(t, out.Background, text)
			id := out.Background.ID
			assertMcpID(t, "bg-", id)
			assert.EqualValues(t, 300, out.Background.WaitMs)
			assert.NotZero(t, out.Pid)
			assert.Nil(t, out.ExitCode, "still running")
			assert.Zero(t, out.TimeoutMs)
			assert.Contains(t, text, "goes on in the background as "+id)
			assert.Contains(t, text, fmt.Sprintf(`bash_read {"id":%q,"stdout_offset":%d,"stderr_offset":%d,"until":"exit"`, id, out.Background.Next.Stdout, out.Background.Next.Stderr))
			assert.EqualValues(t, len(out.Stdout.Tail), out.Background.Next.Stdout)
			assert.True(t, strings.HasPrefix("before\n", out.Stdout.Tail), "the output so far: %q", out.Stdout.Tail)

			var list bashListOut
			list = bashListOut{}
			text = c.callOK(t, "bash_list", nil, &list)
			require.Len(t, list.Processes, 1)
			e := list.Processes[0]
			assert.Equal(t, id, e.ID)
			assert.Equal(t, out.Pid, e.Pid)
			assert.True(t, e.Running)
			assert.Nil(t, e.ExitCode)
			_, err := time.Parse(time.RFC3339, e.StartedAt)
			assert.NoError(t, err)
			assert.Contains(t, text, id+" pid "+strconv.Itoa(out.Pid)+", running for")

			// until exit: one call waits for the end (the FIFO written meanwhile), and reads on
			// from the answer's offsets.
			go writeFIFO(t, fifo, "now\n")
			var rd bashReadOut
			text = c.callOK(t, "bash_read", map[string]any{"id": id, "until": "exit", "wait_ms": 60000,
				"stdout_offset": out.Background.Next.Stdout, "stderr_offset": out.Background.Next.Stderr}, &rd)
			require.NotNil(t, rd.Result, text)
			assert.Equal(t, 3, *rd.Result.ExitCode)
			assert.Equal(t, "before\nafter now\n", out.Stdout.Tail+rd.Stdout.Data)
			assert.Equal(t, "warn\n", out.Stderr.Tail+rd.Stderr.Data)
			assert.True(t, rd.Done)

			rd = bashReadOut{}
			text = c.callOK(t, "bash_read", map[string]any{"id": id, "tail_bytes": 6}, &rd)
			assert.Equal(t, "r now\n", rd.Stdout.Data)
			assert.Equal(t, "warn\n", rd.Stderr.Data)
			assert.EqualValues(t, 11, rd.Stdout.From)
			assert.Contains(t, text, "[the first 11 bytes of stdout are left out here; read them with bash_read stdout_offset 0]")
			rd = bashReadOut{}
			c.callOK(t, "bash_read", map[string]any{"id": id}, &rd)
			assert.Equal(t, "before\nafter now\n", rd.Stdout.Data)

			list = bashListOut{}
			text = c.callOK(t, "bash_list", nil, &list)
			require.Len(t, list.Processes, 1)
			assert.False(t, list.Processes[0].Running)
			assert.Equal(t, 3, *list.Processes[0].ExitCode)
			assert.EqualValues(t, 17, list.Processes[0].StdoutBytes)
			assert.EqualValues(t, 5, list.Processes[0].StderrBytes)
			assert.Contains(t, text, "exited 3")

			// A command that ends within the wait: today's answer, text and structure.
			out = bashOut{}
			text = c.callOK(t, "bash", map[string]any{"command": "echo hi"}, &out)
			assert.Equal(t, "hi\n[exit code 0]\n", text)
			assert.Nil(t, out.Background)
			assert.EqualValues(t, 120000, out.TimeoutMs)
		})
	}
}

// bash_read until exit on a chatty command returns once, at its end, not at its first byte;
// without until it returns at the first new output.
func TestMcpBashReadUntilExit(t *testing.T) {
	c := mcpStart(t, "inprocess")
	fifo := filepath.Join(t.TempDir(), "end")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	var st bashStartOut
	c.callOK(t, "bash_start", map[string]any{"command": "for i in 1 2 3 4 5; do echo $i; done; read -r x < " + fifo + "; echo $x"}, &st)
	var rd bashReadOut
	rd = bashReadOut{}
	c.callOK(t, "bash_read", map[string]any{"id": st.ID, "wait_ms": 60000}, &rd)
	assert.NotEmpty(t, rd.Stdout.Data, "until output: the first bytes")
	assert.True(t, rd.Running)
	go writeFIFO(t, fifo, "last\n")
	rd = bashReadOut{}
	text := c.callOK(t, "bash_read", map[string]any{"id": st.ID, "until": "exit", "wait_ms": 60000}, &rd)
	require.NotNil(t, rd.Result, text)
	assert.Equal(t, "1\n2\n3\n4\n5\nlast\n", rd.Stdout.Data)

	// until exit that runs out of wait says so.
	c.callOK(t, "bash_start", map[string]any{"command": "exec sleep 600"}, &st)
	rd = bashReadOut{}
	text = c.callOK(t, "bash_read", map[string]any{"id": st.ID, "until": "exit", "wait_ms": 50}, &rd)
	assert.True(t, rd.Running)
	assert.Contains(t, text, "[it had not ended after wait_ms 50; call bash_read with until exit again to go on waiting]")
}

// Bad values of the new arguments are tool errors naming the argument; a cwd and env apply
// to bash and bash_start.
func TestMcpBashCwdEnvAndBadArguments(t *testing.T) {
	_, tmp := leakChecked(t)
	cfgDir := filepath.Join(tmp, "work")
	require.NoError(t, os.MkdirAll(filepath.Join(cfgDir, "sub"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(cfgDir, "file"), nil, 0o600))
	cfg := filepath.Join(tmp, "bash.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("cwd: "+cfgDir+"\n"), 0o600))
	c := mcpStart(t, "inprocess", "--config", cfg)
	sub, err := filepath.EvalSymlinks(filepath.Join(cfgDir, "sub"))
	require.NoError(t, err)
	var out bashOut
	out = bashOut{}
	text := c.callOK(t, "bash", map[string]any{"command": "pwd -P; echo $FOO", "cwd": "sub", "env": map[string]any{"FOO": "bar baz"}}, &out)
	assert.Equal(t, sub+"\nbar baz\n[exit code 0]\n", text)
	out = bashOut{}
	text = c.callOK(t, "bash", map[string]any{"command": "pwd -P", "cwd": sub, "timeout_ms": 60000}, &out)
	assert.Equal(t, sub+"\n[exit code 0]\n", text)
	var st bashStartOut
	c.callOK(t, "bash_start", map[string]any{"command": "pwd -P; echo $FOO", "cwd": "sub", "env": map[string]any{"FOO": "x"}}, &st)
	var rd bashReadOut
	rd = bashReadOut{}
	c.callOK(t, "bash_read", map[string]any{"id": st.ID, "until": "exit", "wait_ms": 60000}, &rd)
	assert.Equal(t, sub+"\nx\n", rd.Stdout.Data)

	for _, tc := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"bash", map[string]any{"command": "true", "cwd": "missing"}, "cwd: " + filepath.Join(cfgDir, "missing") + " does not exist"},
		{"bash", map[string]any{"command": "true", "cwd": "file"}, "cwd: " + filepath.Join(cfgDir, "file") + " is not a directory"},
		{"bash", map[string]any{"command": "true", "cwd": "a\x00b"}, "cwd: contains a NUL byte"},
		{"bash_start", map[string]any{"command": "true", "cwd": "missing"}, "cwd: "},
		{"bash", map[string]any{"command": "true", "env": map[string]any{"A=B": "y"}}, `env["A=B"]: variable name "A=B" contains '='`},
		{"bash", map[string]any{"command": "true", "env": map[string]any{"DSH_X": "y"}}, `env["DSH_X"]: names with the managed prefix are the server's own`},
		{"bash_start", map[string]any{"command": "true", "env": map[string]any{"X": "a\x00"}}, `env["X"]`},
		{"bash", map[string]any{"command": "true", "env": map[string]any{"X": 1}}, "env"},
		{"bash", map[string]any{"command": "true", "wait_ms": -1}, "wait_ms: -1 is negative"},
		{"bash", map[string]any{"command": "true", "wait_ms": 120000}, "wait_ms: 120000 is not below timeoutMs 120000"},
		{"bash", map[string]any{"command": "true", "wait_ms": 1e15}, "wait_ms"},
		{"bash", map[string]any{"command": "true", "wait_ms": 1e30}, "argument wait_ms must be an integer in range"},
		{"bash", map[string]any{"command": "true", "wait_ms": 10, "timeout_ms": 10}, "wait_ms: applies without timeout_ms only"},
		{"bash_read", map[string]any{"id": st.ID, "tail_bytes": -1}, "tail_bytes -1 is negative"},
		{"bash_read", map[string]any{"id": st.ID, "tail_bytes": 1 << 21}, "tail_bytes 2097152 is above the limit"},
		{"bash_read", map[string]any{"id": st.ID, "tail_bytes": 5, "stdout_offset": 1}, "leave out stdout_offset and stderr_offset"},
		{"bash_read", map[string]any{"id": st.ID, "until": "forever"}, "until"},
		{"bash_read", map[string]any{"id": st.ID, "until": "exit", "wait_ms": -5}, "wait_ms -5 is negative"},
		{"bash_read", map[string]any{"id": st.ID, "stdout_offset": 1 << 40}, "stdout_offset: "},
		{"bash_list", map[string]any{"x": 1}, `unknown argument "x"`},
	} {
		text := c.callErr(t, tc.tool, tc.args)
		assert.Contains(t, text, tc.want, "%s %v", tc.tool, tc.args)
		for _, goName := range []string{"Dir", "ManagedEnv", "Offsets.", "Timeout", "Go struct"} {
			assert.NotContains(t, text, goName, "%s %v: the argument's name, not the Go field's", tc.tool, tc.args)
		}
	}
	assert.Equal(t, "hi\n[exit code 0]\n", c.callOK(t, "bash", map[string]any{"command": "echo hi"}, &out), "the server still answers")
}

// Adversarial waits: a daemon holding the output pipe does not keep the call open nor make it
// a background process; commands ending right around the wait are either answered or moved,
// never killed; a client at maxBackground keeps the command in the foreground under the
// timeout, and says why; a cancel during the wait leaves nothing running nor listed.
func TestMcpBashWaitEdges(t *testing.T) {
	_, tmp := leakChecked(t)
	cfg := filepath.Join(tmp, "bash.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("maxBackground: 2\ntimeoutMs: 5000\ngraceMs: 200\n"), 0o600))
	c := mcpStart(t, "inprocess", "--config", cfg)
	tag := strconv.Itoa(600000 + rand.IntN(300000))
	t.Cleanup(func() {
		for _, pid := range testutil.Tagged(tag) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	var out bashOut
	out = bashOut{}
	text := c.callOK(t, "bash", map[string]any{"command": "sleep " + tag + " & echo started", "wait_ms": 4000}, &out)
	assert.Nil(t, out.Background, text)
	assert.True(t, out.Lingering)
	assert.True(t, out.PipesHeld)
	assert.Contains(t, text, "started\n[exit code 0]\n")

	for i := range 6 {
		out = bashOut{}
		text := c.callOK(t, "bash", map[string]any{"command": "sleep 0.05; echo end", "wait_ms": 50}, &out)
		if out.Background == nil {
			assert.Equal(t, "end\n[exit code 0]\n", text, "round %d", i)
			continue
		}
		var rd bashReadOut
		rd = bashReadOut{}
		c.callOK(t, "bash_read", map[string]any{"id": out.Background.ID, "until": "exit", "wait_ms": 60000}, &rd)
		require.NotNil(t, rd.Result, "round %d", i)
		assert.Equal(t, 0, *rd.Result.ExitCode, "round %d: never killed", i)
		assert.Equal(t, "end\n", rd.Stdout.Data, "round %d", i)
	}
	// Without wait_ms, on a server whose timeoutMs is below the default wait, the wait is
	// timeoutMs minus 1: the command goes to the background, never killed at the timeout.
	out = bashOut{}
	text = c.callOK(t, "bash", map[string]any{"command": "exec sleep " + tag}, &out)
	require.NotNil(t, out.Background, text)
	assert.EqualValues(t, 4999, out.Background.WaitMs)
	assert.False(t, out.TimedOut)
	c.callOK(t, "bash_stop", map[string]any{"id": out.Background.ID}, nil)

	var list bashListOut
	list = bashListOut{}
	c.callOK(t, "bash_list", nil, &list)
	moved := len(list.Processes)

	// At maxBackground: two running, a third stays in the foreground until timeoutMs.
	var st bashStartOut
	for len(list.Processes) < moved+2 {
		c.callOK(t, "bash_start", map[string]any{"command": "exec sleep " + tag}, &st)
		list = bashListOut{}
		c.callOK(t, "bash_list", nil, &list)
	}
	out = bashOut{}
	text = c.callOK(t, "bash", map[string]any{"command": "exec sleep " + tag, "wait_ms": 100}, &out)
	assert.Nil(t, out.Background)
	assert.True(t, out.TimedOut)
	assert.EqualValues(t, 5000, out.TimeoutMs)
	assert.Contains(t, text, "[the command outlived the wait of 100ms but could not go on in the background (2 background processes of this client are running, the maxBackground limit), so it ran in the foreground under the timeout]")
	for _, p := range list.Processes[moved:] {
		c.callOK(t, "bash_stop", map[string]any{"id": p.ID}, nil)
	}

	// A cancel during the wait ends the tree; nothing goes to the background.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	errc := make(chan error, 1)
	flag := filepath.Join(tmp, "sleeps-started")
	go func() {
		_, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{
			"command": fmt.Sprintf("sleep %s & setsid sleep %s & touch %s; wait", tag, tag, flag), "wait_ms": 4000}})
		errc <- err
	}()
	require.Eventually(t, func() bool { return fileExists(flag) }, 30*time.Second, 5*time.Millisecond, "the sleeps did not start")
	cancel()
	assert.ErrorIs(t, <-errc, context.Canceled)
	require.Eventually(t, func() bool { return len(testutil.Tagged(tag)) <= 1 }, time.Minute, 10*time.Millisecond,
		"left running after the cancellation: %v", testutil.Tagged(tag)) // the first call's daemon stays until the client leaves
	list = bashListOut{}
	c.callOK(t, "bash_list", nil, &list)
	assert.Len(t, list.Processes, moved+2, "nothing new in the background")
}
