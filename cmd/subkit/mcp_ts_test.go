//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
)

// tsClientOutput is what tools/mcp-client/client.cjs prints.
type tsClientOutput struct {
	SDKVersion string `json:"sdk_version"`
	Server     struct {
		Name    string `json:"name"`
		Title   string `json:"title"`
		Version string `json:"version"`
	} `json:"server"`
	Tools []tsTool `json:"tools"`
	Echo  struct {
		Text       string         `json:"text"`
		Structured map[string]any `json:"structured"`
		IsError    bool           `json:"is_error"`
	} `json:"echo"`
	BadInput struct {
		Text    string `json:"text"`
		IsError bool   `json:"is_error"`
	} `json:"bad_input"`
	Background struct {
		ID            string     `json:"id"`
		ReadData      string     `json:"read_data"`
		ReadRunning   bool       `json:"read_running"`
		ReadNext      mcpOffsets `json:"read_next"`
		StopCancelled bool       `json:"stop_cancelled"`
		StopText      string     `json:"stop_text"`
		AfterDone     bool       `json:"after_done"`
	} `json:"background"`
	Cancel struct {
		Started     bool   `json:"started"`
		Outcome     string `json:"outcome"`
		LeftRunning int    `json:"left_running"`
	} `json:"cancel"`
	AfterCancel string `json:"after_cancel"`
	ShellMiddle struct {
		State        string `json:"state"`
		Omitted      int64  `json:"omitted"`
		StepHasError bool   `json:"step_has_error"`
		Found        bool   `json:"found"`
		Reads        int    `json:"reads"`
	} `json:"shell_middle"`
}

type tsTool struct {
	Name       string   `json:"name"`
	InputType  string   `json:"input_type"`
	OutputType string   `json:"output_type"`
	Required   []string `json:"required"`
}

// The official TypeScript SDK client (tools/mcp-client, installed by `make tools`) drives
// `subkit mcp` over stdio and gets the answers the Go SDK's client gets: the same tools with
// schemas (it validates every structured result against its tool's output schema), the same
// text and structured content for `echo hi`, background start/read/stop, and a cancelled call
// that leaves nothing running.
func TestMcpTypeScriptClient(t *testing.T) {
	modules := findMcpClient(t)
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is needed with .bin/mcp-client installed")

	// The Go SDK's answers first, from the same server command.
	c := mcpStart(t, "process")
	var goEcho bashResult
	goText := c.callOK(t, "bash", map[string]any{"command": "echo hi"}, &goEcho)
	list, err := c.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var goTools []string
	for _, tool := range list.Tools {
		goTools = append(goTools, tool.Name)
	}

	tag := strconv.Itoa(600000 + rand.IntN(300000))
	t.Cleanup(func() {
		for _, pid := range testutil.Tagged(tag) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a bound on a hung client, not a measurement
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("..", "..", "tools", "mcp-client", "client.cjs"), os.Args[0], "mcp", "--progress", "20ms")
	cmd.Env = append(os.Environ(), asCLIVar+"=1", "SUBKIT_MCP_CLIENT_MODULES="+modules, "SUBKIT_MCP_TAG="+tag,
		"SUBKIT_MCP_SCRATCH="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "client.cjs: stderr: %s", &stderr)
	var ts tsClientOutput
	dec := json.NewDecoder(&stdout)
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&ts), "client.cjs output")

	assert.Equal(t, "1.32.2", ts.SDKVersion, "the pinned SDK")
	assert.Equal(t, "subkit", ts.Server.Name)
	var tsTools []string
	for _, tool := range ts.Tools {
		tsTools = append(tsTools, tool.Name)
		assert.Equal(t, "object", tool.InputType, tool.Name)
		assert.Equal(t, "object", tool.OutputType, tool.Name)
	}
	assert.Equal(t, goTools, tsTools)
	i := slices.IndexFunc(ts.Tools, func(x tsTool) bool { return x.Name == "bash" })
	require.GreaterOrEqual(t, i, 0)
	assert.Equal(t, []string{"command"}, ts.Tools[i].Required)

	// echo hi: the same text, the same structured content but for the pid and the duration.
	assert.False(t, ts.Echo.IsError)
	assert.Equal(t, goText, ts.Echo.Text)
	assert.Equal(t, "hi\n[exit code 0]\n", ts.Echo.Text)
	b, err := json.Marshal(goEcho)
	require.NoError(t, err)
	var goStructured map[string]any
	require.NoError(t, json.Unmarshal(b, &goStructured))
	for _, m := range []map[string]any{goStructured, ts.Echo.Structured} {
		delete(m, "pid")
		delete(m, "duration_ms")
	}
	assert.Equal(t, goStructured, ts.Echo.Structured)

	assert.True(t, ts.BadInput.IsError)
	assert.Contains(t, ts.BadInput.Text, "command")

	bg := ts.Background
	assertMcpID(t, "bg-", bg.ID)
	assert.Equal(t, "one\n", bg.ReadData)
	assert.True(t, bg.ReadRunning)
	assert.Equal(t, mcpOffsets{Stdout: 4}, bg.ReadNext)
	assert.True(t, bg.StopCancelled)
	assert.Contains(t, bg.StopText, "[cancelled: the command and every process it started were terminated")
	assert.True(t, bg.AfterDone)

	assert.True(t, ts.Cancel.Started, "the cancelled command's sleeps started")
	assert.NotEqual(t, "answered", ts.Cancel.Outcome, "the aborted call rejects on the client")
	assert.Zero(t, ts.Cancel.LeftRunning, "sleeps left in the server's tree after the cancellation")
	assert.Equal(t, "still serving\n[exit code 0]\n", ts.AfterCancel)

	// The middle of a 200 kB shell step, left out of the step, read back by offset.
	sm := ts.ShellMiddle
	assert.Equal(t, "completed", sm.State)
	assert.Positive(t, sm.Omitted)
	assert.False(t, sm.StepHasError, "the step leaves the middle out")
	assert.True(t, sm.Found, "the error line, read back from the middle with shell_read (%d reads)", sm.Reads)
	assert.Empty(t, testutil.Tagged(tag))
}

// findMcpClient is the directory `make tools` installed the TypeScript SDK into
// (<repo>/.bin/mcp-client). When it is missing the test skips if the install recorded why
// (.bin/mcp-client.failed) or under -short, and fails otherwise: a client that should be there
// is never skipped silently.
func findMcpClient(t *testing.T) string {
	t.Helper()
	root := ""
	for dir, _ := os.Getwd(); ; dir = filepath.Dir(dir) {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			s := bufio.NewScanner(f)
			s.Scan()
			f.Close()
			if strings.TrimSpace(s.Text()) == "module github.com/subkit/subkit" {
				root = dir
				break
			}
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	require.NotEmpty(t, root, "the repository root")
	modules := filepath.Join(root, ".bin", "mcp-client")
	if fileExists(filepath.Join(modules, "node_modules", "@modelcontextprotocol", "sdk", "package.json")) {
		return modules
	}
	if b, err := os.ReadFile(filepath.Join(root, ".bin", "mcp-client.failed")); err == nil {
		t.Skipf("the TypeScript MCP client is not installed: its install step failed (`make tools`; .bin/mcp-client.failed):\n%s", b)
	}
	if testing.Short() {
		t.Skip("the TypeScript MCP client is not installed (-short): run `make tools`")
	}
	t.Fatal("the TypeScript MCP client is not installed: run `make tools` (npm ci of tools/mcp-client into .bin/mcp-client)")
	return ""
}

// A command longer than the TypeScript client's default request timeout (60 s), through bash
// without timeout_ms: the answer comes after the server's wait with a background id instead
// of the client giving up; bash_read until exit follows it to its end, and its whole output
// reads back from offset 0. The client's request timeout is its default, never raised.
func TestMcpTypeScriptLongCommand(t *testing.T) {
	t.Parallel() // most of it is the command's own 62 s
	modules := findMcpClient(t)
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is needed with .bin/mcp-client installed")
	mark := testutil.Mark() // leakChecked's, without t.Setenv, which a parallel test may not call
	testutil.NoLeaks(t, mark)
	tag := strconv.Itoa(600000 + rand.IntN(300000))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a bound on a hung client, not a measurement
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join("..", "..", "tools", "mcp-client", "client.cjs"), os.Args[0], "mcp")
	cmd.Env = append(os.Environ(), asCLIVar+"=1", "SUBKIT_MCP_CLIENT_MODULES="+modules, "SUBKIT_MCP_TAG="+tag,
		"SUBKIT_MCP_SCENARIO=long", "SUBKIT_MCP_LONG_SECONDS=62", testutil.MarkVar+"="+mark, "TMPDIR="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "client.cjs: stderr: %s", &stderr)
	var out struct {
		Long struct {
			FirstText    string           `json:"first_text"`
			FirstIsError bool             `json:"first_is_error"`
			AnsweredMs   int64            `json:"answered_ms"`
			ID           string           `json:"id"`
			Pid          int              `json:"pid"`
			Reads        []map[string]any `json:"reads"`
			Followed     string           `json:"followed"`
			Whole        string           `json:"whole"`
			WholeDone    bool             `json:"whole_done"`
			ExitCode     *int             `json:"exit_code"`
			TotalMs      int64            `json:"total_ms"`
			Listed       []bashListEntry  `json:"listed"`
		} `json:"long"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &out), "client.cjs output: %s", &stdout)
	l := out.Long
	assert.False(t, l.FirstIsError, l.FirstText)
	assertMcpID(t, "bg-", l.ID)
	assert.NotZero(t, l.Pid)
	assert.Contains(t, l.FirstText, "goes on in the background as "+l.ID)
	var want strings.Builder
	for i := 1; i <= 62; i++ {
		fmt.Fprintf(&want, "line %d\n", i)
	}
	want.WriteString("done " + tag + "\n")
	assert.Equal(t, want.String(), l.Whole, "the whole output, read back from offset 0")
	assert.True(t, l.WholeDone)
	assert.Equal(t, want.String(), l.Followed, "the answer's output so far, then each bash_read from the offsets before it")
	require.NotNil(t, l.ExitCode, "reads: %v", l.Reads)
	assert.Equal(t, 0, *l.ExitCode)
	require.Len(t, l.Listed, 1)
	assert.Equal(t, l.ID, l.Listed[0].ID)
	assert.False(t, l.Listed[0].Running)
	assert.EqualValues(t, want.Len(), l.Listed[0].StdoutBytes)
}
