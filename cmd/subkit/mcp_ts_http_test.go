//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
)

// mcpTSHTTPScript drives `subkit mcp --http` with two TypeScript SDK clients (the token passed
// as the transport's requestInit headers, as an MCP client configuration's "headers" does):
// one without the token, then a and b as strangers, then a DELETE while a's call runs. It
// prints what it saw as one JSON object.
const mcpTSHTTPScript = `'use strict';
const path = require('node:path');
const { createRequire } = require('node:module');
const sdkRequire = createRequire(path.join(path.resolve(process.env.SUBKIT_MCP_CLIENT_MODULES), 'package.json'));
const { Client } = sdkRequire('@modelcontextprotocol/sdk/client/index.js');
const { StreamableHTTPClientTransport } = sdkRequire('@modelcontextprotocol/sdk/client/streamableHttp.js');
const url = new URL(process.env.SUBKIT_MCP_URL);
const tag = process.env.SUBKIT_MCP_TAG;
const headers = { Authorization: 'Bearer ' + process.env.SUBKIT_TEST_BEARER };
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (res) => (res.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('');
async function until(limitMs, probe) {
  for (const end = Date.now() + limitMs; Date.now() < end; await sleep(20)) {
    const v = await probe();
    if (v !== undefined) return v;
  }
  return undefined;
}
async function connect(h) {
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: h } });
  const client = new Client({ name: 'subkit-ts-http', version: '1' });
  await client.connect(transport);
  return { client, transport };
}
(async () => {
  const out = {};
  try {
    await connect({});
    out.no_token = 'connected';
  } catch (err) {
    out.no_token = String(err && err.message);
  }
  const a = await connect(headers);
  const b = await connect(headers);
  const sh = await a.client.callTool({ name: 'shell_open', arguments: {} });
  const shellID = sh.structuredContent.id;
  await a.client.callTool({ name: 'shell_run', arguments: { id: shellID, command: 'export SECRET=only-a' } });
  const bg = await a.client.callTool({ name: 'bash_start', arguments: { command: 'exec sleep ' + tag } });
  const bgID = bg.structuredContent.id;
  out.ids = [shellID, bgID];
  out.b_tries = [];
  for (const [name, args] of [
    ['shell_run', { id: shellID, command: 'echo $SECRET' }], ['shell_run', { id: '1', command: 'echo $SECRET' }],
    ['bash_read', { id: bgID }], ['bash_stop', { id: bgID }], ['bash_stop', { id: '1' }],
  ]) {
    const r = await b.client.callTool({ name, arguments: args });
    out.b_tries.push({ name, is_error: !!r.isError, text: text(r) });
  }
  out.b_shells = (await b.client.callTool({ name: 'shell_list', arguments: {} })).structuredContent.sessions.length;
  const sleeps = async () => (await b.client.callTool({ name: 'process_tree', arguments: {} }))
    .structuredContent.processes.filter((p) => p.comm === 'sleep').length;
  const pending = a.client.callTool({ name: 'bash', arguments: { command: 'sleep ' + tag + '; echo done', timeout_ms: 600000 } },
    undefined, { timeout: 600000 }).then(() => 'answered', (err) => 'rejected: ' + String(err && err.message));
  out.both_running = await until(20000, async () => ((await sleeps()) === 2 ? true : undefined)) || false;
  const start = Date.now();
  await a.transport.terminateSession();
  out.delete_ms = Date.now() - start;
  await a.client.close();
  out.call_outcome = await pending;
  out.left_after_delete = await until(20000, async () => ((await sleeps()) === 0 ? 0 : undefined));
  const again = await b.client.callTool({ name: 'bash', arguments: { command: 'echo b goes on' } });
  out.b_after = text(again);
  await b.transport.terminateSession();
  await b.client.close();
  process.stdout.write(JSON.stringify(out) + '\n');
})().catch((err) => { console.error('ts http client:', err && err.stack ? err.stack : err); process.exit(1); });
`

// The TypeScript SDK client over --http: without the token it cannot connect (401); with it
// (in the transport's headers) two clients are strangers; a DELETE (terminateSession) while
// a call runs is answered at once and that client's processes are gone.
func TestMcpTypeScriptClientHTTP(t *testing.T) {
	modules := findMcpClient(t)
	node, err := exec.LookPath("node")
	require.NoError(t, err, "node is needed with .bin/mcp-client installed")
	h := mcpHTTPStart(t, "")
	tag := strconv.Itoa(600000 + rand.IntN(300000))
	killTagged(t, tag)
	script := filepath.Join(t.TempDir(), "http-client.cjs")
	require.NoError(t, os.WriteFile(script, []byte(mcpTSHTTPScript), 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a bound on a hung client, not a measurement
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Env = append(os.Environ(), "SUBKIT_MCP_CLIENT_MODULES="+modules, "SUBKIT_MCP_URL="+h.url, "SUBKIT_MCP_TAG="+tag,
		"SUBKIT_TEST_BEARER="+h.token)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stderr: %s", &stderr)
	var out struct {
		NoToken string   `json:"no_token"`
		IDs     []string `json:"ids"`
		BTries  []struct {
			Name    string `json:"name"`
			IsError bool   `json:"is_error"`
			Text    string `json:"text"`
		} `json:"b_tries"`
		BShells         int    `json:"b_shells"`
		BothRunning     bool   `json:"both_running"`
		DeleteMs        int    `json:"delete_ms"`
		CallOutcome     string `json:"call_outcome"`
		LeftAfterDelete *int   `json:"left_after_delete"`
		BAfter          string `json:"b_after"`
	}
	dec := json.NewDecoder(&stdout)
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&out), "client output")

	assert.Contains(t, out.NoToken, "401")
	require.Len(t, out.IDs, 2)
	assertMcpID(t, "sh-", out.IDs[0])
	assertMcpID(t, "bg-", out.IDs[1])
	require.Len(t, out.BTries, 5)
	for _, try := range out.BTries {
		assert.True(t, try.IsError, "b's %s: %s", try.Name, try.Text)
		assert.Regexp(t, "no (shell session|background process)", try.Text, try.Name)
		assert.NotContains(t, try.Text, "only-a")
	}
	assert.Zero(t, out.BShells)
	assert.True(t, out.BothRunning, "a's sleeps ran")
	assert.Less(t, out.DeleteMs, 1000, "the DELETE is answered at once")
	assert.NotEqual(t, "answered", out.CallOutcome)
	require.NotNil(t, out.LeftAfterDelete, "a's sleeps are left after the DELETE")
	assert.Zero(t, *out.LeftAfterDelete)
	assert.Equal(t, "b goes on\n[exit code 0]\n", out.BAfter)
	assert.Empty(t, testutil.Tagged(tag))
	t.Logf("DELETE answered in %d ms; the call in flight: %s", out.DeleteMs, out.CallOutcome)
}
