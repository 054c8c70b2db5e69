//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
)

// syncBuffer is a bytes.Buffer safe for the concurrent writers of a server's stderr.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// mcpConn is a Go SDK client session on a subkit mcp server.
type mcpConn struct {
	*mcp.ClientSession
	rpc      *syncBuffer // every JSON-RPC message, "write: ..." (to the server) and "read: ..." (from it)
	stderr   *syncBuffer
	pid      int // the server's process (the test's own in-process)
	progress chan *mcp.ProgressNotificationParams
}

// mcpModes are the two ways the tests reach the server: the test binary re-executed as
// `subkit mcp` (a real process over its stdin and stdout, as an agent runs it), and run()
// in-process over pipes (the race detector then sees the server too).
var mcpModes = []string{"process", "inprocess"}

// mcpStart starts `subkit mcp ARGS...` and connects the Go SDK's client to it. Everything the
// server starts carries the test's mark; the leak check, registered first, runs after the
// session is closed and the server has exited with status 0.
func mcpStart(t *testing.T, mode string, args ...string) *mcpConn {
	t.Helper()
	return mcpStartProto(t, mode, "", args...)
}

// mcpStartProto is mcpStart with the protocol version the client asks for ("": the
// latest, which connects with server/discover; "2025-11-25" and earlier with initialize).
func mcpStartProto(t *testing.T, mode, proto string, args ...string) *mcpConn {
	t.Helper()
	leakChecked(t)
	c := &mcpConn{rpc: &syncBuffer{}, stderr: &syncBuffer{}, progress: make(chan *mcp.ProgressNotificationParams, 100)}
	client := mcp.NewClient(&mcp.Implementation{Name: "subkit-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			select {
			case c.progress <- req.Params:
			default:
			}
		},
	})
	ctx := context.Background()
	var transport mcp.Transport
	var exited func() int
	switch mode {
	case "process":
		cmd := exec.Command(os.Args[0], append([]string{"mcp"}, args...)...)
		cmd.Env = append(os.Environ(), asCLIVar+"=1")
		cmd.Stderr = c.stderr
		transport = &mcp.CommandTransport{Command: cmd}
		exited = func() int {
			if cmd.ProcessState == nil {
				return -1
			}
			return cmd.ProcessState.ExitCode()
		}
		defer func() {
			if cmd.Process != nil {
				c.pid = cmd.Process.Pid
			}
		}()
	case "inprocess":
		fromServer, toClient := io.Pipe()
		fromClient, toServer := io.Pipe()
		done := make(chan int, 1)
		go func() {
			code := run(ctx, append([]string{"mcp"}, args...), fromClient, toClient, c.stderr)
			toClient.Close()
			fromClient.Close()
			done <- code
		}()
		transport = &mcp.IOTransport{Reader: fromServer, Writer: toServer}
		exited = func() int { return <-done }
		c.pid = os.Getpid()
	default:
		t.Fatalf("mode %q", mode)
	}
	sess, err := client.Connect(ctx, &mcp.LoggingTransport{Transport: transport, Writer: c.rpc}, &mcp.ClientSessionOptions{ProtocolVersion: proto})
	require.NoError(t, err, "stderr: %s", c.stderr)
	c.ClientSession = sess
	t.Cleanup(func() {
		assert.NoError(t, sess.Close())
		assert.Equal(t, 0, exited(), "subkit mcp's exit status; stderr: %s", c.stderr)
		assert.Empty(t, c.stderr.String(), "the server's stderr: warnings and errors of a run that went as it should")
	})
	return c
}

// call calls a tool and fails the test on a protocol error.
func (c *mcpConn) call(t *testing.T, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, "tools/call %s %v; stderr: %s", name, args, c.stderr)
	return res
}

// callOK calls a tool that must succeed and decodes its structured content into out.
func (c *mcpConn) callOK(t *testing.T, name string, args map[string]any, out any) string {
	t.Helper()
	res := c.call(t, name, args)
	text := mcpText(res)
	require.False(t, res.IsError, "%s %v: %s", name, args, text)
	if out != nil {
		b, err := json.Marshal(res.StructuredContent)
		require.NoError(t, err)
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		require.NoError(t, dec.Decode(out), "structured content: %s", b)
	}
	return text
}

// try is callOK for the condition of an Eventually (which runs it on a goroutine of its own,
// where a test must not fail): it reports whether the call succeeded and decoded into out.
func (c *mcpConn) try(name string, args map[string]any, out any) bool {
	res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil || res.IsError {
		return false
	}
	b, err := json.Marshal(res.StructuredContent)
	return err == nil && json.Unmarshal(b, out) == nil
}

// callErr calls a tool that must answer with a tool error, and returns its text.
func (c *mcpConn) callErr(t *testing.T, name string, args map[string]any) string {
	t.Helper()
	res := c.call(t, name, args)
	require.True(t, res.IsError, "%s %v should be a tool error: %s", name, args, mcpText(res))
	return mcpText(res)
}

// assertMcpID checks that id is an id the server made for a client: prefix and 16 random
// base32 characters (80 bits), nothing a counter would give.
func assertMcpID(t *testing.T, prefix, id string) {
	t.Helper()
	assert.Regexp(t, "^"+regexp.QuoteMeta(prefix)+"[a-z2-7]{16}$", id)
}

func mcpText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

var mcpToolNames = []string{
	"bash", "bash_list", "bash_read", "bash_start", "bash_stop",
	"code_run", "code_session_close", "code_session_list", "code_session_open", "code_session_restart", "code_session_run",
	"lsp_definition", "lsp_diagnostics", "lsp_hover", "lsp_references", "lsp_rename", "lsp_symbols", "process_kill", "process_tree",
	"shell_close", "shell_interrupt", "shell_list", "shell_open", "shell_poll", "shell_read", "shell_run", "shell_terminate", "shell_write",
}

// initialize (and the newer server/discover) and tools/list: every tool, each with an input
// and an output schema; bash's input schema is generated from its Go type (command required,
// timeout_ms optional).
func TestMcpInitializeAndList(t *testing.T) {
	for _, tc := range []struct{ mode, proto, method string }{
		{"process", "2025-11-25", "initialize"}, {"inprocess", "2025-06-18", "initialize"},
		{"process", "", "server/discover"}, {"inprocess", "", "server/discover"},
	} {
		t.Run(tc.mode+"/"+tc.method+"/"+tc.proto, func(t *testing.T) {
			c := mcpStartProto(t, tc.mode, tc.proto)
			init := c.InitializeResult()
			require.NotNil(t, init)
			assert.Equal(t, "subkit", init.ServerInfo.Name)
			require.NotNil(t, init.Capabilities.Tools)
			assert.Contains(t, c.rpc.String(), `"method":"`+tc.method+`"`)
			if tc.proto != "" {
				assert.Equal(t, tc.proto, init.ProtocolVersion)
			}

			res, err := c.ListTools(context.Background(), nil)
			require.NoError(t, err)
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
				assert.NotEmpty(t, tool.Description, tool.Name)
				in, _ := tool.InputSchema.(map[string]any)
				assert.Equal(t, "object", in["type"], "%s input schema: %v", tool.Name, tool.InputSchema)
				out, _ := tool.OutputSchema.(map[string]any)
				assert.Equal(t, "object", out["type"], "%s output schema: %v", tool.Name, tool.OutputSchema)
			}
			slices.Sort(names)
			assert.Equal(t, mcpToolNames, names)

			bash := res.Tools[slices.IndexFunc(res.Tools, func(t *mcp.Tool) bool { return t.Name == "bash" })]
			in := bash.InputSchema.(map[string]any)
			assert.Equal(t, []any{"command"}, in["required"])
			props := in["properties"].(map[string]any)
			assert.Equal(t, "string", props["command"].(map[string]any)["type"])
			assert.Equal(t, "integer", props["timeout_ms"].(map[string]any)["type"])
			outProps := bash.OutputSchema.(map[string]any)["properties"].(map[string]any)
			for _, k := range []string{"exit_code", "stdout", "stderr", "survivors", "timed_out", "cancelled", "timeout_ms"} {
				assert.Contains(t, outProps, k)
			}
			code := res.Tools[slices.IndexFunc(res.Tools, func(t *mcp.Tool) bool { return t.Name == "code_run" })]
			lang := code.InputSchema.(map[string]any)["properties"].(map[string]any)["language"].(map[string]any)
			assert.Equal(t, []any{"python3", "node", "bash"}, lang["enum"])
		})
	}
}

// tools/call bash with `echo hi`: the text is the bash executor's, the structured content
// its fields.
func TestMcpBashEcho(t *testing.T) {
	for _, mode := range mcpModes {
		t.Run(mode, func(t *testing.T) {
			c := mcpStart(t, mode)
			var out bashResult
			text := c.callOK(t, "bash", map[string]any{"command": "echo hi"}, &out)
			assert.Equal(t, "hi\n[exit code 0]\n", text)
			require.NotNil(t, out.ExitCode)
			assert.Equal(t, 0, *out.ExitCode)
			assert.Equal(t, "hi\n", out.Stdout.Tail)
			assert.EqualValues(t, 3, out.Stdout.TotalBytes)
			assert.Equal(t, "echo hi", out.Command)
			assert.False(t, out.Cancelled)
			assert.False(t, out.TimedOut)
			assert.EqualValues(t, 120000, out.TimeoutMs)
			assert.Empty(t, out.Survivors)

			// Exit status, stderr, stdin and a signal.
			text = c.callOK(t, "bash", map[string]any{"command": "cat; echo oops >&2; exit 3", "stdin": "in\n"}, &out)
			assert.Equal(t, "in\n[stderr]\noops\n[exit code 3]\n", text)
			assert.Equal(t, 3, *out.ExitCode)
			assert.Equal(t, "oops\n", out.Stderr.Tail)
			c.callOK(t, "bash", map[string]any{"command": "kill -KILL $$"}, &out)
			assert.Nil(t, out.ExitCode)
			assert.Equal(t, "SIGKILL", out.Signal)
		})
	}
}

// A long stream: the tail within maxOutputBytes, the whole stream in the spill file the text
// names; a timeout ends the whole tree; a daemon is reported as a survivor.
func TestMcpBashBounds(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "bash.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("maxOutputBytes: 100\nmaxTimeoutMs: 30000\ngraceMs: 200\n"), 0o600))
	c := mcpStart(t, "inprocess", "--config", cfg)
	var out bashResult
	text := c.callOK(t, "bash", map[string]any{"command": "seq 1 10000"}, &out)
	assert.True(t, out.Stdout.Truncated)
	assert.LessOrEqual(t, len(out.Stdout.Tail), 100)
	assert.True(t, strings.HasSuffix(out.Stdout.Tail, "9999\n10000\n"))
	require.NotEmpty(t, out.Stdout.SpillPath)
	assert.Contains(t, text, out.Stdout.SpillPath)
	data, err := os.ReadFile(out.Stdout.SpillPath)
	require.NoError(t, err)
	assert.EqualValues(t, out.Stdout.TotalBytes, len(data))

	tag := strconv.Itoa(600000 + rand.IntN(300000))
	text = c.callOK(t, "bash", map[string]any{"command": "trap '' TERM; sleep " + tag + " & sleep " + tag, "timeout_ms": 300}, &out)
	assert.True(t, out.TimedOut)
	assert.EqualValues(t, 300, out.TimeoutMs)
	assert.Contains(t, text, "[timed out after 300ms")
	assert.Empty(t, testutil.Tagged(tag), "the timed-out tree is gone")

	// Above maxTimeoutMs: lowered, and both the text and the result say so.
	text = c.callOK(t, "bash", map[string]any{"command": "true", "timeout_ms": 1e15}, &out)
	assert.EqualValues(t, 30000, out.TimeoutMs)
	assert.Contains(t, text, "[timeout_ms 1000000000000000 is above the limit maxTimeoutMs 30000: 30000 applied]")

	// A daemon left running is listed, then ended with the server.
	text = c.callOK(t, "bash", map[string]any{"command": "sleep " + tag + " & echo started"}, &out)
	assert.True(t, out.Lingering)
	require.Len(t, out.Survivors, 1)
	assert.Equal(t, "sleep", out.Survivors[0].Comm)
	assert.Contains(t, text, fmt.Sprintf("pid %d (sleep)", out.Survivors[0].Pid))
}

// Bad input is a tool error saying what to change; the connection stays usable.
func TestMcpBadInput(t *testing.T) {
	c := mcpStart(t, "inprocess")
	cases := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"bash", map[string]any{}, "command"},
		{"bash", map[string]any{"command": 42}, "command"},
		{"bash", map[string]any{"command": "true", "timeout_ms": 1e30}, "timeout_ms"},
		{"bash", map[string]any{"command": "true", "timeout_ms": 1.5}, "timeout_ms"},
		{"bash", map[string]any{"command": "true", "timeout_ms": -1}, "negative"},
		{"bash", map[string]any{"command": "true", "bogus": 1}, "bogus"},
		{"bash", map[string]any{"command": "   "}, "request refused"},
		{"bash", map[string]any{"command": "echo \x00"}, "NUL"},
		{"bash_read", map[string]any{"id": "999"}, "no background process"},
		{"bash_stop", map[string]any{"id": 1}, "id"},
		{"shell_run", map[string]any{"id": "999", "command": "true"}, "no shell session"},
		{"shell_poll", map[string]any{"id": "1", "yield_ms": 1e12}, "yield_ms"},
		{"code_run", map[string]any{"language": "cobol", "code": "x"}, "language"},
		{"code_run", map[string]any{"language": "python3"}, "code"},
		{"code_session_run", map[string]any{"id": "7", "code": "1"}, "no code session"},
		{"code_session_open", map[string]any{"language": "bash"}, "language"},
		{"lsp_diagnostics", map[string]any{"files": []any{}}, "files is empty"},
		{"lsp_diagnostics", map[string]any{"files": []any{"x.unknownext"}}, "x.unknownext"},
		{"lsp_diagnostics", map[string]any{"files": "main.go"}, "files"},
		{"process_tree", map[string]any{"pid": -4}, "negative"},
		{"process_tree", map[string]any{"pid": 1e40}, "argument pid must be an integer in range"},
		{"bash_read", map[string]any{"id": "x", "max_bytes": 1e20}, "argument max_bytes must be an integer in range"},
		{"bash", map[string]any{"command": "true", "timeout_ms": 1e30}, "argument timeout_ms must be an integer in range"},
		{"bash", map[string]any{"command": 42}, `argument command: type: 42 has type "integer", want "string"`},
		{"bash", map[string]any{}, `missing argument "command"`},
		{"bash", map[string]any{"command": "true", "bogus": 1, "x": 2}, `unknown argument "bogus", "x"`},
		{"lsp_diagnostics", map[string]any{"files": []any{1}}, "argument files[]: "},
	}
	for _, tc := range cases {
		text := c.callErr(t, tc.tool, tc.args)
		assert.Contains(t, text, tc.want, "%s %v", tc.tool, tc.args)
		for _, goText := range []string{"Go struct field", "json: ", "validating root"} {
			assert.NotContains(t, text, goText, "%s %v: the argument, not the decoder", tc.tool, tc.args)
		}
		assert.NotRegexp(t, `main\.\w+In\b`, text, "%s %v: no Go type", tc.tool, tc.args)
	}
	// A command too long for exec(2) is refused by the system, not a crash.
	assert.Contains(t, c.callErr(t, "bash", map[string]any{"command": "echo " + strings.Repeat("x", 3<<20)}), "argument list too long")
	_, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool"})
	assert.Error(t, err, "an unknown tool is a protocol error")

	var out bashResult
	assert.Equal(t, "hi\n[exit code 0]\n", c.callOK(t, "bash", map[string]any{"command": "echo hi"}, &out), "the server still answers")
}

// A call the client cancels ends its whole tree, while the server goes on; the answer the
// server still sends says cancelled.
func TestMcpCancel(t *testing.T) {
	for _, mode := range mcpModes {
		t.Run(mode, func(t *testing.T) {
			c := mcpStart(t, mode)
			tag := strconv.Itoa(600000 + rand.IntN(300000))
			t.Cleanup(func() {
				for _, pid := range testutil.Tagged(tag) {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 1)
			go func() {
				_, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{
					"command": fmt.Sprintf("sleep %s & setsid sleep %s & sleep %s", tag, tag, tag)}})
				errc <- err
			}()
			require.Eventually(t, func() bool { return len(testutil.Tagged(tag)) == 3 }, time.Minute, 5*time.Millisecond,
				"the command's sleeps did not start")
			cancel()
			assert.ErrorIs(t, <-errc, context.Canceled)
			require.Eventually(t, func() bool { return len(testutil.Tagged(tag)) == 0 }, time.Minute, 10*time.Millisecond,
				"left running after the cancellation: %v", testutil.Tagged(tag))

			// The server answered the cancelled call (the client had retired it): cancelled.
			var reply map[string]any
			require.Eventually(t, func() bool { reply = cancelledReply(c.rpc.String(), tag); return reply != nil },
				10*time.Second, 10*time.Millisecond, "no answer to the cancelled call in %s", c.rpc)
			sc := reply["result"].(map[string]any)["structuredContent"].(map[string]any)
			assert.Equal(t, true, sc["cancelled"], "%v", reply)
			assert.Contains(t, reply["result"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"], "[cancelled: the command and every process it started were terminated")

			var out bashResult
			assert.Equal(t, "hi\n[exit code 0]\n", c.callOK(t, "bash", map[string]any{"command": "echo hi"}, &out))
		})
	}
}

// code_run and code_session_run cancelled by the client: the run's tree ends, the cell is
// interrupted, the answers say cancelled, and the session goes on.
func TestMcpCodeCancel(t *testing.T) {
	c := mcpStart(t, "inprocess")
	tag := strconv.Itoa(600000 + rand.IntN(300000))
	cancelCall := func(name string, args map[string]any, running func() bool) map[string]any {
		t.Helper()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		errc := make(chan error, 1)
		go func() {
			_, err := c.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
			errc <- err
		}()
		require.Eventually(t, running, 20*time.Second, 5*time.Millisecond, "%s did not start", name)
		cancel()
		assert.ErrorIs(t, <-errc, context.Canceled)
		var reply map[string]any
		require.Eventually(t, func() bool { reply = cancelledReply(c.rpc.String(), tag); return reply != nil },
			20*time.Second, 10*time.Millisecond, "no answer to the cancelled %s", name)
		result, _ := reply["result"].(map[string]any)
		sc, ok := result["structuredContent"].(map[string]any)
		require.True(t, ok, "the answer to the cancelled %s has structured content: %v", name, reply)
		return sc
	}
	sc := cancelCall("code_run", map[string]any{"language": "bash", "code": "sleep " + tag + " & setsid sleep " + tag + "; wait"},
		func() bool { return len(testutil.Tagged(tag)) == 2 })
	assert.Equal(t, true, sc["cancelled"])
	require.Eventually(t, func() bool { return len(testutil.Tagged(tag)) == 0 }, time.Minute, 10*time.Millisecond)

	var sess codeSessionOut
	c.callOK(t, "code_session_open", map[string]any{"language": "python3"}, &sess)
	assertMcpID(t, "cs-", sess.ID)
	var cell cellResult
	c.callOK(t, "code_session_run", map[string]any{"id": sess.ID, "code": "kept = 1"}, &cell)
	flag := filepath.Join(t.TempDir(), "cell-started")
	tag = strconv.Itoa(600000 + rand.IntN(300000)) // a fresh tag: the log already has the first call's
	sc = cancelCall("code_session_run", map[string]any{"id": sess.ID, "code": fmt.Sprintf("import time\nopen(%q, 'w').close()\ntime.sleep(%s)", flag, tag)},
		func() bool { return fileExists(flag) })
	assert.Equal(t, true, sc["cancelled"])
	assert.Equal(t, true, sc["interrupted"])
	codeErr, _ := sc["error"].(map[string]any)
	assert.Equal(t, "KeyboardInterrupt", codeErr["name"], "%v", sc)
	c.callOK(t, "code_session_run", map[string]any{"id": sess.ID, "code": "kept + 1"}, &cell)
	assert.Equal(t, "2", cell.Results[0].Text, "the session kept its state")
}

// cancelledReply finds, in a LoggingTransport log, the server's answer to the tools/call whose
// command contains tag.
func cancelledReply(log, tag string) map[string]any {
	var id any
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var m map[string]any
		if body, ok := strings.CutPrefix(line, "write: "); ok && strings.Contains(body, tag) && json.Unmarshal([]byte(body), &m) == nil && m["method"] == "tools/call" {
			id = m["id"]
		}
		if body, ok := strings.CutPrefix(line, "read: "); ok && id != nil && json.Unmarshal([]byte(body), &m) == nil && m["id"] == id && m["result"] != nil {
			return m
		}
	}
	return nil
}

// Background commands: start, offset reads (incremental and from 0 again), stop ends the
// tree, and the output stays readable.
func TestMcpBackground(t *testing.T) {
	for _, mode := range mcpModes {
		t.Run(mode, func(t *testing.T) {
			c := mcpStart(t, mode)
			tag := strconv.Itoa(600000 + rand.IntN(300000))
			var st bashStartOut
			text := c.callOK(t, "bash_start", map[string]any{"command": "echo one; echo err >&2; sleep " + tag + " & wait"}, &st)
			assertMcpID(t, "bg-", st.ID)
			assert.NotZero(t, st.Pid)
			assert.Contains(t, text, `bash_read {"id":"`+st.ID+`"}`)

			var rd bashReadOut
			require.Eventually(t, func() bool {
				return c.try("bash_read", map[string]any{"id": st.ID}, &rd) && rd.Stdout.Data == "one\n" && rd.Stderr.Data == "err\n" && len(testutil.Tagged(tag)) == 1
			}, 10*time.Second, 10*time.Millisecond, "last read: %+v", rd)
			assert.True(t, rd.Running)
			assert.Nil(t, rd.Result)
			assert.Equal(t, mcpOffsets{Stdout: 4, Stderr: 4}, rd.Next)

			text = c.callOK(t, "bash_read", map[string]any{"id": st.ID, "stdout_offset": rd.Next.Stdout, "stderr_offset": rd.Next.Stderr}, &rd)
			assert.Equal(t, fmt.Sprintf("[no new output; background process %d is still running]\n", st.Pid), text)
			assert.Empty(t, rd.Stdout.Data)
			assert.Contains(t, c.callErr(t, "bash_read", map[string]any{"id": st.ID, "max_bytes": 1e9}), "above the limit")
			assert.Contains(t, c.callErr(t, "bash_read", map[string]any{"id": st.ID, "stdout_offset": -1}), "negative")
			assert.Contains(t, c.callErr(t, "bash_read", map[string]any{"id": st.ID, "wait_ms": 1e12}), "wait_ms")
			c.callOK(t, "bash_read", map[string]any{"id": st.ID, "stdout_offset": 2, "max_bytes": 1}, &rd)
			assert.Equal(t, "e", rd.Stdout.Data)
			assert.EqualValues(t, 3, rd.Next.Stdout)

			var stop bashStopOut
			text = c.callOK(t, "bash_stop", map[string]any{"id": st.ID}, &stop)
			assert.True(t, stop.Cancelled)
			assert.Contains(t, text, "[cancelled: the command and every process it started were terminated")
			assert.Empty(t, testutil.Tagged(tag), "bash_stop ended the tree")

			text = c.callOK(t, "bash_read", map[string]any{"id": st.ID}, &rd)
			assert.False(t, rd.Running)
			assert.True(t, rd.Done)
			require.NotNil(t, rd.Result)
			assert.True(t, rd.Result.Cancelled)
			assert.Equal(t, "one\n", rd.Stdout.Data)
			assert.Contains(t, text, "has ended; all output has been read")

			// One that ends by itself, followed with wait_ms (each read waits for new output or
			// the end), then read again in steps.
			c.callOK(t, "bash_start", map[string]any{"command": "printf 'x%.0s' $(seq 1 3000); exit 4"}, &st)
			followed, next := 0, mcpOffsets{}
			for rd.Result = nil; rd.Result == nil; {
				c.callOK(t, "bash_read", map[string]any{"id": st.ID, "wait_ms": 60000, "max_bytes": 5000,
					"stdout_offset": next.Stdout, "stderr_offset": next.Stderr}, &rd)
				followed += len(rd.Stdout.Data)
				next = rd.Next
			}
			assert.Equal(t, 4, *rd.Result.ExitCode)
			assert.Equal(t, 3000, followed)
			c.callOK(t, "bash_read", map[string]any{"id": st.ID, "max_bytes": 1000}, &rd)
			assert.Len(t, rd.Stdout.Data, 1000)
			assert.False(t, rd.Done, "more output remains")
			c.callOK(t, "bash_read", map[string]any{"id": st.ID, "stdout_offset": rd.Next.Stdout, "max_bytes": 5000}, &rd)
			assert.Len(t, rd.Stdout.Data, 2000)
			assert.True(t, rd.Done)
		})
	}
}

// Progress notifications reach a client that asked for them: the command below waits (on a
// FIFO) until the test's handler has seen one.
func TestMcpProgress(t *testing.T) {
	c := mcpStart(t, "process", "--progress", "20ms")
	fifo := filepath.Join(t.TempDir(), "progress-seen")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	seen := make(chan *mcp.ProgressNotificationParams, 1)
	go func() {
		p := <-c.progress
		seen <- p
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil { // until the command reads
			f.WriteString("yes\n")
			f.Close()
		}
	}()
	params := &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{
		"command": fmt.Sprintf("read -r seen < %s; echo progress-seen=$seen", fifo)}}
	params.SetProgressToken("tok-1")
	res, err := c.CallTool(context.Background(), params)
	require.NoError(t, err)
	assert.Equal(t, "progress-seen=yes\n[exit code 0]\n", mcpText(res))
	p := <-seen
	assert.Equal(t, "tok-1", p.ProgressToken)
	assert.Contains(t, p.Message, "bash: running for")
	assert.Greater(t, p.Progress, 0.0)
}

// Shell sessions keep their state; a running command is polled and interrupted.
func TestMcpShell(t *testing.T) {
	c := mcpStart(t, "inprocess")
	var info shellInfoOut
	c.callOK(t, "shell_open", map[string]any{}, &info)
	assertMcpID(t, "sh-", info.ID)
	dir := t.TempDir()
	var st shellStepOut
	text := c.callOK(t, "shell_run", map[string]any{"id": info.ID, "command": "cd " + dir + " && export X=41"}, &st)
	assert.Equal(t, "completed", st.State)
	assert.Equal(t, fmt.Sprintf("[exit code 0; cwd %s]\n", dir), text)
	text = c.callOK(t, "shell_run", map[string]any{"id": info.ID, "command": "echo $((X+1)); pwd"}, &st)
	assert.Equal(t, fmt.Sprintf("42\n%s\n[exit code 0; cwd %s]\n", dir, dir), text)

	// Linux ends the step once read waits for input (an event: the yield only bounds it);
	// elsewhere the step runs until the yield, kept short for that reason.
	text = c.callOK(t, "shell_run", map[string]any{"id": info.ID, "command": "read -r line; echo got $line", "yield_ms": waitingYield.Milliseconds()}, &st)
	assert.Equal(t, waitingState, st.State)
	assert.Nil(t, st.ExitCode)
	assert.Contains(t, text, map[string]string{"running": "[still running after", "waiting_for_input": "[waiting for input: bash"}[waitingState])
	c.callOK(t, "shell_write", map[string]any{"id": info.ID, "chars": "hello\n"}, &st)
	assert.Equal(t, "completed", st.State)
	assert.Equal(t, "hello\ngot hello\n", st.Output)

	c.callOK(t, "shell_run", map[string]any{"id": info.ID, "command": "sleep 600", "yield_ms": 100}, &st)
	for st.Foreground != "sleep" { // until the shell has started it (it may still be bash at the yield)
		assert.Equal(t, "running", st.State)
		c.callOK(t, "shell_poll", map[string]any{"id": info.ID, "yield_ms": 50}, &st)
	}
	assert.Equal(t, "running", st.State)
	assert.Contains(t, c.callErr(t, "shell_run", map[string]any{"id": info.ID, "command": "true"}), "a command is still running")
	c.callOK(t, "shell_interrupt", map[string]any{"id": info.ID}, &st)
	assert.Equal(t, "completed", st.State)
	assert.Equal(t, 130, *st.ExitCode)

	assert.Contains(t, c.callErr(t, "shell_run", map[string]any{"id": info.ID, "command": "if then fi"}), "syntax error")
	var list shellListOut
	c.callOK(t, "shell_list", map[string]any{}, &list)
	require.Len(t, list.Sessions, 1)
	assert.Equal(t, dir, list.Sessions[0].Cwd)
	var closed shellCloseOut
	c.callOK(t, "shell_close", map[string]any{"id": info.ID}, &closed)
	assert.True(t, closed.Closed)
	assert.Contains(t, c.callErr(t, "shell_poll", map[string]any{"id": info.ID}), "no shell session")
}

// A shell_run the client cancels sends Ctrl-C to the command; the session goes on.
func TestMcpShellCancel(t *testing.T) {
	c := mcpStart(t, "inprocess")
	var info shellInfoOut
	c.callOK(t, "shell_open", map[string]any{}, &info)
	tag := strconv.Itoa(600000 + rand.IntN(300000))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // a failure below must not leave the call to wait out its yield in cleanup
	errc := make(chan error, 1)
	go func() {
		_, err := c.CallTool(ctx, &mcp.CallToolParams{Name: "shell_run", Arguments: map[string]any{"id": info.ID, "command": "sleep " + tag, "yield_ms": 600000}})
		errc <- err
	}()
	require.Eventually(t, func() bool { return len(testutil.Tagged(tag)) == 1 }, time.Minute, 5*time.Millisecond)
	cancel()
	assert.ErrorIs(t, <-errc, context.Canceled)
	require.Eventually(t, func() bool { return len(testutil.Tagged(tag)) == 0 }, time.Minute, 10*time.Millisecond)
	var st shellStepOut
	text := c.callOK(t, "shell_run", map[string]any{"id": info.ID, "command": "echo still here"}, &st)
	assert.Contains(t, text, "still here\n")
}

func TestMcpCode(t *testing.T) {
	c := mcpStart(t, "inprocess")
	for _, lang := range []string{"python3", "node"} {
		if _, err := exec.LookPath(lang); err != nil {
			t.Fatalf("%s is not installed: the code tools' tests need it", lang)
		}
	}
	var out codeResult
	text := c.callOK(t, "code_run", map[string]any{"language": "python3", "code": "print('hi')\n1/0\n"}, &out)
	assert.Equal(t, 1, *out.ExitCode)
	assert.Equal(t, "hi\n", out.Stdout.Tail)
	require.NotNil(t, out.Error)
	assert.Equal(t, "ZeroDivisionError", out.Error.Name)
	assert.Contains(t, text, "[error: ZeroDivisionError: division by zero]\n[exit code 1]\n")
	text = c.callOK(t, "code_run", map[string]any{"language": "node", "code": "console.log(6*7)"}, &out)
	assert.Equal(t, "42\n[exit code 0]\n", text)
	c.callOK(t, "code_run", map[string]any{"language": "bash", "code": "read x; echo $x", "stdin": "typed\n"}, &out)
	assert.Equal(t, "typed\n", out.Stdout.Tail)
	text = c.callOK(t, "code_run", map[string]any{"language": "python3", "code": "import time\ntime.sleep(600)", "timeout_ms": 300}, &out)
	assert.True(t, out.TimedOut)
	assert.Contains(t, text, "[timed out after 300ms")

	var sess codeSessionOut
	c.callOK(t, "code_session_open", map[string]any{"language": "python3"}, &sess)
	assertMcpID(t, "cs-", sess.ID)
	var cell cellResult
	c.callOK(t, "code_session_run", map[string]any{"id": sess.ID, "code": "x = 41\nprint('set')"}, &cell)
	assert.Equal(t, "set\n", cell.Stdout.Tail)
	text = c.callOK(t, "code_session_run", map[string]any{"id": sess.ID, "code": "x + 1"}, &cell)
	assert.Equal(t, 2, cell.ExecutionCount)
	require.Len(t, cell.Results, 1)
	assert.Equal(t, "42", cell.Results[0].Text)
	assert.Contains(t, text, "Out[2]: 42\n")
	c.callOK(t, "code_session_run", map[string]any{"id": sess.ID, "code": "'é' * 100000"}, &cell)
	require.Len(t, cell.Results, 1)
	assert.Less(t, len(cell.Results[0].Text), 16100, "a result's text is bounded")
	assert.True(t, strings.HasSuffix(cell.Results[0].Text, "more bytes left out]"), cell.Results[0].Text[len(cell.Results[0].Text)-60:])
	assert.True(t, utf8.ValidString(cell.Results[0].Text))
	c.callOK(t, "code_session_run", map[string]any{"id": sess.ID, "code": "raise ValueError('bad')"}, &cell)
	require.NotNil(t, cell.Error)
	assert.Equal(t, "ValueError", cell.Error.Name)
	var list codeListOut
	c.callOK(t, "code_session_list", map[string]any{}, &list)
	assert.Equal(t, []codeSessionOut{{ID: sess.ID, Language: "python3"}}, list.Sessions)
	c.callOK(t, "code_session_restart", map[string]any{"id": sess.ID}, &sess)
	c.callOK(t, "code_session_run", map[string]any{"id": sess.ID, "code": "x"}, &cell)
	require.NotNil(t, cell.Error)
	assert.Equal(t, "NameError", cell.Error.Name, "the restart dropped the state")
	assert.Equal(t, 1, cell.ExecutionCount)
	c.callOK(t, "code_session_close", map[string]any{"id": sess.ID}, &sess)
	assert.Contains(t, c.callErr(t, "code_session_run", map[string]any{"id": sess.ID, "code": "1"}), "no code session")
}

// lsp_diagnostics through a pooled server: the server named by the call, or by --lsp for the
// file's extension; a file changed on disk is sent again and answered as its next version.
func TestMcpLspDiagnostics(t *testing.T) {
	fake := lspFake(t)
	root := t.TempDir()
	notes := filepath.Join(root, "notes.txt")
	require.NoError(t, os.WriteFile(notes, []byte("fine\nan ERROR here\n"), 0o644))
	c := mcpStart(t, "inprocess", "--lsp", ".txt="+fake)
	var out lspDiagnosticsOut
	text := c.callOK(t, "lsp_diagnostics", map[string]any{"files": []any{"notes.txt"}, "root": root}, &out)
	require.Len(t, out.Files, 1)
	f := out.Files[0]
	assert.True(t, f.Complete)
	assert.Equal(t, 1, f.Version)
	require.Len(t, f.Diagnostics, 1)
	assert.Equal(t, diagOut{Line: 2, Column: 4, EndLine: 2, EndColumn: 9, Severity: "error", Source: "fake", Message: "found ERROR"}, f.Diagnostics[0])
	assert.Contains(t, text, "notes.txt:2:4: error: found ERROR [fake]\n")
	require.Len(t, out.Servers, 1)
	assert.Equal(t, []string{fake}, out.Servers[0].Command)

	require.NoError(t, os.WriteFile(notes, []byte("all fine now\n"), 0o644))
	text = c.callOK(t, "lsp_diagnostics", map[string]any{"files": []any{notes}, "root": root, "server": []any{fake}}, &out)
	assert.Equal(t, 2, out.Files[0].Version)
	assert.True(t, out.Files[0].Complete)
	assert.Empty(t, out.Files[0].Diagnostics)
	assert.Contains(t, text, "[0 diagnostic(s) in 1 file(s)]")

	assert.Contains(t, c.callErr(t, "lsp_diagnostics", map[string]any{"files": []any{"notes.txt"}, "root": root, "server": []any{"no-such-server-xyz"}}),
		"could not be started")
	assert.Contains(t, c.callErr(t, "lsp_diagnostics", map[string]any{"files": []any{"missing.txt"}, "root": root}), "missing.txt")
}

// lsp_diagnostics with gopls, a real server named by --lsp: the compiler's error, its column
// in bytes.
func TestMcpLspGopls(t *testing.T) {
	gopls := findGoplsForCLI(t)
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOTOOLCHAIN", "local")
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/hello\n\ngo 1.26\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "main.go"), []byte("package main\n\nfunc main() {\n\tvar n int = \"oops\"\n\t_ = n\n}\n"), 0o644))
	c := mcpStart(t, "inprocess", "--lsp", ".go="+gopls)
	var out lspDiagnosticsOut
	text := c.callOK(t, "lsp_diagnostics", map[string]any{"files": []any{"main.go"}, "root": root}, &out)
	require.Len(t, out.Files, 1)
	require.NotEmpty(t, out.Files[0].Diagnostics, text)
	d := out.Files[0].Diagnostics[0]
	assert.Equal(t, 4, d.Line)
	assert.Equal(t, 14, d.Column)
	assert.Contains(t, d.Message, `cannot use "oops"`)
	assert.Equal(t, "gopls", out.Servers[0].Name)
	assert.Contains(t, text, `main.go:4:14: error: cannot use "oops"`)
}

// process_tree without a pid shows the server and what it runs.
func TestMcpProcessTree(t *testing.T) {
	c := mcpStart(t, "process")
	tag := strconv.Itoa(600000 + rand.IntN(300000))
	var st bashStartOut
	c.callOK(t, "bash_start", map[string]any{"command": "exec sleep " + tag}, &st)
	var tree processTreeOut
	require.Eventually(t, func() bool {
		return c.try("process_tree", map[string]any{}, &tree) && slices.ContainsFunc(tree.Processes, func(p treeProc) bool { return p.Pid == st.Pid && p.Comm == "sleep" })
	}, 10*time.Second, 10*time.Millisecond, "%+v", tree)
	assert.Equal(t, c.pid, tree.Root)
	assert.Equal(t, c.pid, tree.Processes[0].Pid)
	assert.Zero(t, tree.Processes[0].Depth)
	var one processTreeOut
	text := c.callOK(t, "process_tree", map[string]any{"pid": st.Pid}, &one)
	require.Len(t, one.Processes, 1)
	assert.Contains(t, text, "sleep")
	assert.Contains(t, c.callErr(t, "process_tree", map[string]any{"pid": 999999999}), "no process")
}

// Requests piped in, stdin then closed: every one is answered before the server exits (a
// half-close does not drop the answers in flight); a call still running when stdin ends is
// cancelled, whatever its timeout, and its answer says so.
func TestMcpPipedRequests(t *testing.T) {
	mark := testutil.Mark()
	testutil.NoLeaks(t, mark)
	tag := strconv.Itoa(600000 + rand.IntN(300000))
	cmd := exec.Command(os.Args[0], "mcp")
	cmd.Env = append(os.Environ(), asCLIVar+"=1", testutil.MarkVar+"="+mark, "TMPDIR="+t.TempDir())
	cmd.Stdin = strings.NewReader(strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"bash","arguments":{"command":"sleep ` + tag + `; echo hi","timeout_ms":600000}}}`,
		`{"jsonrpc":"2.0","id":"four","method":"tools/call","params":{"name":"bash_read","arguments":{"id":"x","max_bytes":"many"}}}`,
	}, "\n")) // the last line without its newline
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "stderr: %s", &stderr)
	answers := map[string]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		answers[fmt.Sprint(m["id"])] = m
	}
	require.Len(t, answers, 4, "%s", out)
	assert.Equal(t, "subkit", answers["1"]["result"].(map[string]any)["serverInfo"].(map[string]any)["name"])
	assert.Len(t, answers["2"]["result"].(map[string]any)["tools"], len(mcpToolNames))
	// The bash call was cancelled while it ran, or refused before it started.
	res := answers["3"]["result"].(map[string]any)
	text := res["content"].([]any)[0].(map[string]any)["text"].(string)
	if res["isError"] == true {
		assert.Contains(t, text, "nothing ran")
	} else {
		assert.Equal(t, true, res["structuredContent"].(map[string]any)["cancelled"], "%v", res)
		assert.NotContains(t, text, "hi\n")
	}
	assert.Equal(t, true, answers["four"]["result"].(map[string]any)["isError"])
	assert.Empty(t, testutil.Tagged(tag))
	assert.Empty(t, stderr.String())
}

// An interrupt ends a stdio server too, while its client is still connected: status 130.
func TestMcpInterrupted(t *testing.T) {
	leakChecked(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fromServer, toClient := io.Pipe()
	fromClient, toServer := io.Pipe()
	done := make(chan int, 1)
	var stderr syncBuffer
	go func() { done <- run(ctx, []string{"mcp"}, fromClient, toClient, &stderr) }()
	client := mcp.NewClient(&mcp.Implementation{Name: "subkit-test"}, nil)
	sess, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: fromServer, Writer: toServer}, nil)
	require.NoError(t, err)
	res, err := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "echo hi"}})
	require.NoError(t, err)
	assert.Equal(t, "hi\n[exit code 0]\n", mcpText(res))
	cancel()
	assert.Equal(t, exitCancelled, <-done)
	assert.Empty(t, stderr.String(), "an interrupt is how the server stops: nothing to report")
	assert.NoError(t, sess.Close())
}

func TestMcpUsage(t *testing.T) {
	code, out, _ := cli(t, "", "mcp", "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "lsp_diagnostics")
	for _, args := range [][]string{{"mcp", "--bogus"}, {"mcp", "extra"}, {"mcp", "--lsp", "go"}, {"mcp", "--progress", "0s"},
		{"mcp", "--writable", "/tmp"}, {"mcp", "--config", "/no/such/file.yaml"}} {
		code, _, errOut := cli(t, "", args...)
		assert.Equal(t, exitUsage, code, "%v", args)
		assert.Contains(t, errOut, "subkit mcp:", "%v", args)
	}
	_, out, _ = cli(t, "", "help")
	assert.Contains(t, out, "  mcp ")
}
