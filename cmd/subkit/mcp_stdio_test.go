//go:build linux

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
)

// rawMcp is a client that speaks newline-delimited JSON-RPC to `subkit mcp` itself, so it can
// send what no SDK client would.
type rawMcp struct {
	in     io.WriteCloser
	msgs   chan any // every message from the server, decoded; closed at the end of its stdout
	seen   []any    // messages read but not yet taken
	stderr *syncBuffer
	mark   string
	exited func() int
}

// rawMcpStart starts `subkit mcp ARGS...` in mode (see mcpModes) with a leak check.
func rawMcpStart(t *testing.T, mode string, args ...string) *rawMcp {
	t.Helper()
	mark, _ := leakChecked(t)
	c := &rawMcp{msgs: make(chan any, 100), stderr: &syncBuffer{}, mark: mark}
	var out io.Reader
	switch mode {
	case "process":
		cmd := exec.Command(os.Args[0], append([]string{"mcp"}, args...)...)
		cmd.Env = append(os.Environ(), asCLIVar+"=1")
		cmd.Stderr = c.stderr
		var err error
		c.in, err = cmd.StdinPipe()
		require.NoError(t, err)
		out, err = cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		c.exited = func() int {
			cmd.Wait()
			return cmd.ProcessState.ExitCode()
		}
	case "inprocess":
		fromServer, toClient := io.Pipe()
		fromClient, toServer := io.Pipe()
		done := make(chan int, 1)
		go func() {
			code := run(context.Background(), append([]string{"mcp"}, args...), fromClient, toClient, c.stderr)
			toClient.Close()
			fromClient.Close()
			done <- code
		}()
		c.in, out = toServer, fromServer
		c.exited = func() int { return <-done }
	default:
		t.Fatalf("mode %q", mode)
	}
	go func() {
		defer close(c.msgs)
		r := bufio.NewReader(out)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				var m any
				if json.Unmarshal(line, &m) != nil {
					m = "not JSON: " + string(line)
				}
				c.msgs <- m
			}
			if err != nil {
				return
			}
		}
	}()
	return c
}

func (c *rawMcp) send(t *testing.T, line string) {
	t.Helper()
	_, err := io.WriteString(c.in, line+"\n")
	require.NoError(t, err)
}

// take returns the first message from the server, read or to come, that match accepts.
func (c *rawMcp) take(t *testing.T, what string, match func(any) bool) any {
	t.Helper()
	for i, m := range c.seen {
		if match(m) {
			c.seen = append(c.seen[:i], c.seen[i+1:]...)
			return m
		}
	}
	timeout := time.After(2 * time.Minute) // a bound on a hung server, not a measurement
	for {
		select {
		case m, ok := <-c.msgs:
			require.True(t, ok, "the server's stdout ended before %s; stderr: %s", what, c.stderr)
			if match(m) {
				return m
			}
			c.seen = append(c.seen, m)
		case <-timeout:
			t.Fatalf("no %s from the server; read: %v", what, c.seen)
		}
	}
}

// answer returns the response to id (a JSON value: 7, "x").
func (c *rawMcp) answer(t *testing.T, id string) map[string]any {
	t.Helper()
	var want any
	require.NoError(t, json.Unmarshal([]byte(id), &want))
	m := c.take(t, "answer to id "+id, func(m any) bool {
		o, ok := m.(map[string]any)
		return ok && o["method"] == nil && o["id"] == want
	})
	return m.(map[string]any)
}

// call sends a request and returns its answer.
func (c *rawMcp) call(t *testing.T, id, method, params string) map[string]any {
	t.Helper()
	c.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, params))
	return c.answer(t, id)
}

// tool calls a tool and returns its result's structured content and text.
func (c *rawMcp) tool(t *testing.T, id, name string, args map[string]any) (map[string]any, string) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"name": name, "arguments": args})
	require.NoError(t, err)
	m := c.call(t, id, "tools/call", string(b))
	res, ok := m["result"].(map[string]any)
	require.True(t, ok, "%s: %v", name, m)
	sc, _ := res["structuredContent"].(map[string]any)
	text := ""
	if content, ok := res["content"].([]any); ok && len(content) > 0 {
		text, _ = content[0].(map[string]any)["text"].(string)
	}
	return sc, text
}

func (c *rawMcp) initialize(t *testing.T) {
	t.Helper()
	init := c.call(t, "0", "initialize", `{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`)
	require.NotNil(t, init["result"], "%v", init)
	c.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// rpcError checks that m is an error response of code and returns its message.
func rpcError(t *testing.T, m map[string]any, code int) string {
	t.Helper()
	e, ok := m["error"].(map[string]any)
	require.True(t, ok, "an error response: %v", m)
	assert.EqualValues(t, code, e["code"], "%v", m)
	msg, _ := e["message"].(string)
	return msg
}

// Malformed traffic is answered, and the connection, its shell session and its processes
// stay: a line that is not JSON and a truncated one (-32700), a batch, a message that is not
// an object, a bad version, a duplicated id while the first request runs, a 17 MB message
// with its id first and with its id last (-32600, saying the limit).
func TestMcpStdioFraming(t *testing.T) {
	for _, mode := range mcpModes {
		t.Run(mode, func(t *testing.T) {
			c := rawMcpStart(t, mode)
			c.initialize(t)
			sh, _ := c.tool(t, "1", "shell_open", map[string]any{})
			shellID, _ := sh["id"].(string)
			require.NotEmpty(t, shellID)
			st, _ := c.tool(t, "2", "shell_run", map[string]any{"id": shellID, "command": "export KEPT=still-here"})
			require.Equal(t, "completed", st["state"])
			tag := strconv.Itoa(600000 + rand.IntN(300000))
			t.Cleanup(func() {
				for _, pid := range testutil.Tagged(tag) {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			bg, _ := c.tool(t, "3", "bash_start", map[string]any{"command": "exec sleep " + tag})
			require.NotEmpty(t, bg["id"])

			nullID := func(m map[string]any) {
				t.Helper()
				v, ok := m["id"]
				assert.True(t, ok && v == nil, "id null: %v", m)
			}
			errorLine := func(m any) bool {
				o, ok := m.(map[string]any)
				return ok && o["error"] != nil && o["id"] == nil
			}
			c.send(t, "this is not JSON")
			m := c.take(t, "parse error", errorLine).(map[string]any)
			nullID(m)
			assert.Contains(t, rpcError(t, m, -32700), "not JSON")

			c.send(t, `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"bash","arg`)
			m = c.take(t, "parse error of a truncated line", errorLine).(map[string]any)
			nullID(m)
			assert.Contains(t, rpcError(t, m, -32700), "unexpected end of JSON input")

			c.send(t, `[{"jsonrpc":"2.0","id":11,"method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`)
			batch := c.take(t, "batch answer", func(m any) bool { _, ok := m.([]any); return ok }).([]any)
			require.Len(t, batch, 1, "one error, for the request with an id: %v", batch)
			assert.EqualValues(t, 11, batch[0].(map[string]any)["id"])
			assert.Contains(t, rpcError(t, batch[0].(map[string]any), -32600), "batches are not accepted")
			c.send(t, `[]`)
			assert.Contains(t, rpcError(t, c.take(t, "empty batch answer", errorLine).(map[string]any), -32600), "batches")

			c.send(t, `42`)
			assert.Contains(t, rpcError(t, c.take(t, "not an object", errorLine).(map[string]any), -32600), "object")
			assert.NotNil(t, c.call(t, "12", "tools/list", "{}")["result"], "the connection still answers")
			c.send(t, `{"jsonrpc":"1.0","id":13,"method":"tools/list"}`)
			assert.Contains(t, rpcError(t, c.answer(t, "13"), -32600), "version")

			// A duplicated id while the first request runs: refused; the first still answers.
			c.send(t, `{"jsonrpc":"2.0","id":"dup","method":"tools/call","params":{"name":"bash","arguments":{"command":"sleep `+tag+`; echo first","timeout_ms":600000}}}`)
			require.Eventually(t, func() bool { return len(testutil.Tagged(tag)) == 2 }, 20*time.Second, 5*time.Millisecond, "the first call's sleep")
			c.send(t, `{"jsonrpc":"2.0","id":"dup","method":"tools/list"}`)
			assert.Contains(t, rpcError(t, c.answer(t, `"dup"`), -32600), "in use")
			c.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"dup"}}`)
			first := c.answer(t, `"dup"`)
			assert.Equal(t, true, first["result"].(map[string]any)["structuredContent"].(map[string]any)["cancelled"], "%v", first)

			// 17 MB: the id first (the Go SDK's order) and last (the TypeScript SDK's).
			big := strings.Repeat("x", 17_000_000)
			c.send(t, `{"jsonrpc":"2.0","id":14,"method":"tools/call","params":{"name":"bash","arguments":{"command":"cat >/dev/null","stdin":"`+big+`"}}}`)
			msg := rpcError(t, c.answer(t, "14"), -32600)
			assert.Contains(t, msg, "16 MiB")
			assert.Contains(t, msg, "17000")
			c.send(t, `{"method":"tools/call","params":{"name":"bash","arguments":{"command":"cat","stdin":"`+big+`"}},"jsonrpc":"2.0","id":"last"}`)
			assert.Contains(t, rpcError(t, c.answer(t, `"last"`), -32600), "16 MiB")

			// Everything stays: the shell session with its state, the background process.
			st, text := c.tool(t, "20", "shell_run", map[string]any{"id": shellID, "command": "echo $KEPT"})
			assert.Equal(t, "completed", st["state"])
			assert.Contains(t, text, "still-here")
			rd, _ := c.tool(t, "21", "bash_read", map[string]any{"id": bg["id"]})
			assert.Equal(t, true, rd["running"])
			assert.Len(t, testutil.Tagged(tag), 1)

			require.NoError(t, c.in.Close())
			assert.Equal(t, 0, c.exited(), "stderr: %s", c.stderr)
			assert.Empty(t, c.stderr.String())
			assert.Empty(t, testutil.Tagged(tag))
		})
	}
}
