//go:build linux

package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
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

// mcpGoneWithin is how soon a stdio server whose client left must be gone, with everything it
// started, whatever the timeouts of the calls in flight (600 s here).
const mcpGoneWithin = 2 * time.Second

// noRaceExitSleep keeps a binary built with -race (the server and its guard helper) from
// sleeping a second at exit, which would count against mcpGoneWithin.
const noRaceExitSleep = "GORACE=atexit_sleep_ms=0"

// goneWithin waits until no live process carries mark and reports how long that took; it
// fails the test when they are not gone within a bound far above what is asked.
func goneWithin(t *testing.T, mark string, since time.Time) time.Duration {
	t.Helper()
	require.Eventually(t, func() bool { return len(testutil.Marked(mark)) == 0 }, time.Minute, 5*time.Millisecond,
		"still alive: %v", testutil.Marked(mark))
	return time.Since(since)
}

// The client closes the server's stdin (and keeps reading its stdout) during a bash call with
// timeout_ms 600000, with a background process running: the call is answered as cancelled,
// and the server and every process it started are gone within 2 s.
func TestMcpStdinClosedEndsEverything(t *testing.T) {
	mark := testutil.Mark()
	testutil.NoLeaks(t, mark)
	tag := strconv.Itoa(600000 + rand.IntN(300000))
	cmd := exec.Command(os.Args[0], "mcp")
	cmd.Env = append(os.Environ(), asCLIVar+"=1", testutil.MarkVar+"="+mark, "TMPDIR="+t.TempDir(), noRaceExitSleep)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()

	client := mcp.NewClient(&mcp.Implementation{Name: "subkit-test"}, nil)
	sess, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: stdout, Writer: stdin}, nil)
	require.NoError(t, err)
	_, err = sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "bash_start", Arguments: map[string]any{"command": "exec sleep " + tag}})
	require.NoError(t, err)
	answer := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := sess.CallTool(context.Background(), &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{
			"command": "sleep " + tag + "; echo done", "timeout_ms": 600000}})
		answer <- res
	}()
	require.Eventually(t, func() bool { return len(testutil.Tagged(tag)) == 2 }, 20*time.Second, 5*time.Millisecond)

	start := time.Now()
	require.NoError(t, stdin.Close())
	res := <-answer
	require.NotNil(t, res, "the call in flight is answered before the server exits")
	assert.Equal(t, true, res.StructuredContent.(map[string]any)["cancelled"], "%s", mcpText(res))
	took := goneWithin(t, mark, start)
	<-exited
	assert.LessOrEqual(t, took, mcpGoneWithin, "the server and what it started are gone")
	assert.Equal(t, 0, cmd.ProcessState.ExitCode(), "stderr: %s", stderr)
	assert.Empty(t, stderr.String())
	sess.Close()
	t.Logf("gone %v after stdin was closed", took)
}

// mcpKillClientScript is a TypeScript SDK client that starts `subkit mcp` over stdio, starts a
// background process, then a bash call with timeout_ms 600000, and says so on stdout: the
// test then kills it with SIGKILL.
const mcpKillClientScript = `'use strict';
const path = require('node:path');
const { createRequire } = require('node:module');
const sdkRequire = createRequire(path.join(path.resolve(process.env.SUBKIT_MCP_CLIENT_MODULES), 'package.json'));
const { Client } = sdkRequire('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = sdkRequire('@modelcontextprotocol/sdk/client/stdio.js');
const tag = process.env.SUBKIT_MCP_TAG;
const [command, ...args] = process.argv.slice(2);
(async () => {
  const transport = new StdioClientTransport({ command, args, env: { ...process.env }, stderr: 'inherit' });
  const client = new Client({ name: 'subkit-ts-kill', version: '1' });
  await client.connect(transport);
  await client.callTool({ name: 'bash_start', arguments: { command: 'exec sleep ' + tag } });
  client.callTool({ name: 'bash', arguments: { command: 'sleep ' + tag + '; echo done', timeout_ms: 600000 } }, undefined, { timeout: 600000 })
    .catch(() => {});
  process.stdout.write('calling ' + transport.pid + '\n');
})().catch((err) => { console.error('kill client:', err && err.stack ? err.stack : err); process.exit(1); });
`

// The TypeScript SDK client is killed with SIGKILL during a bash call with timeout_ms 600000,
// with a background process running: the server it started and every process the server
// started are gone within 2 s.
func TestMcpClientKilledEndsEverything(t *testing.T) {
	modules := findMcpClient(t)
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is needed with .bin/mcp-client installed")
	mark := testutil.Mark()
	testutil.NoLeaks(t, mark)
	tag := strconv.Itoa(600000 + rand.IntN(300000))
	script := filepath.Join(t.TempDir(), "kill-client.cjs")
	require.NoError(t, os.WriteFile(script, []byte(mcpKillClientScript), 0o600))
	cmd := exec.Command(node, script, os.Args[0], "mcp")
	cmd.Env = append(os.Environ(), asCLIVar+"=1", testutil.MarkVar+"="+mark, "TMPDIR="+t.TempDir(),
		"SUBKIT_MCP_CLIENT_MODULES="+modules, "SUBKIT_MCP_TAG="+tag, noRaceExitSleep)
	stderr := &syncBuffer{}
	cmd.Stderr = stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "client stderr: %s", stderr)
	var serverPid int
	_, err = fmt.Sscanf(line, "calling %d", &serverPid)
	require.NoError(t, err, "%q", line)
	require.Eventually(t, func() bool { return len(testutil.Tagged(tag)) == 2 }, 20*time.Second, 5*time.Millisecond)
	require.Contains(t, testutil.Marked(mark), serverPid, "the server is found by its mark")

	start := time.Now()
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	took := goneWithin(t, mark, start)
	assert.LessOrEqual(t, took, mcpGoneWithin, "the server (pid %d) and what it started are gone", serverPid)
	cmd.Wait()
	assert.Empty(t, strings.TrimSpace(stderr.String()), "the server's stderr (inherited by the client)")
	t.Logf("gone %v after the client was killed", took)
}
