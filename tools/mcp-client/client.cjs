// client.cjs drives `subkit mcp` with the official TypeScript MCP SDK client over stdio, for the
// cmd/subkit tests (TestMcpTypeScriptClient), and prints what it saw as one JSON object.
//
//   SUBKIT_MCP_CLIENT_MODULES=.bin/mcp-client node tools/mcp-client/client.cjs SERVER [ARGS...]
//
// SUBKIT_MCP_CLIENT_MODULES is where `make tools` installed this directory's package.json with
// npm ci (the SDK is resolved from there); SUBKIT_MCP_TAG is a number the test looks for in the
// process table, and SUBKIT_MCP_SCRATCH a directory the commands may write in. The server gets
// this process's environment. SUBKIT_MCP_SCENARIO=long runs only the long-command scenario
// (TestMcpTypeScriptLongCommand): a command of SUBKIT_MCP_LONG_SECONDS (62) seconds through
// bash with the client's default request timeout, followed with bash_read until it ends.
'use strict';

const fs = require('node:fs');
const path = require('node:path');
const { createRequire } = require('node:module');

const modules = process.env.SUBKIT_MCP_CLIENT_MODULES;
if (!modules) {
  console.error('client.cjs: set SUBKIT_MCP_CLIENT_MODULES to the directory npm ci installed the SDK into');
  process.exit(2);
}
const sdkRequire = createRequire(path.join(path.resolve(modules), 'package.json'));
const { Client } = sdkRequire('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = sdkRequire('@modelcontextprotocol/sdk/client/stdio.js');
const sdkVersion = JSON.parse(
  fs.readFileSync(path.join(path.resolve(modules), 'node_modules', '@modelcontextprotocol', 'sdk', 'package.json'), 'utf8'),
).version;

const tag = process.env.SUBKIT_MCP_TAG || '0';
const scratch = process.env.SUBKIT_MCP_SCRATCH || fs.mkdtempSync(path.join(require('node:os').tmpdir(), 'mcp-client-'));
const [command, ...args] = process.argv.slice(2);

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const text = (res) => (res.content || []).filter((c) => c.type === 'text').map((c) => c.text).join('');

// until calls probe every 20 ms until it returns a value other than undefined, for at most
// limitMs; it returns that value, or undefined.
async function until(limitMs, probe) {
  for (const end = Date.now() + limitMs; Date.now() < end; await sleep(20)) {
    const v = await probe();
    if (v !== undefined) return v;
  }
  return undefined;
}

async function main() {
  const out = { sdk_version: sdkVersion };
  const transport = new StdioClientTransport({ command, args, env: { ...process.env }, stderr: 'inherit' });
  const client = new Client({ name: 'subkit-ts-test', version: '1' });
  await client.connect(transport);
  out.server = client.getServerVersion();
  if (process.env.SUBKIT_MCP_SCENARIO === 'long') {
    await longCommand(client, out);
    await client.close();
    process.stdout.write(JSON.stringify(out) + '\n');
    return;
  }

  // tools/list: names and schemas (listing also makes the client validate every structured
  // result against its tool's output schema from here on).
  const listed = await client.listTools();
  out.tools = listed.tools.map((t) => ({
    name: t.name,
    input_type: t.inputSchema && t.inputSchema.type,
    output_type: t.outputSchema && t.outputSchema.type,
    required: (t.inputSchema && t.inputSchema.required) || [],
  }));

  const echo = await client.callTool({ name: 'bash', arguments: { command: 'echo hi' } });
  out.echo = { text: text(echo), structured: echo.structuredContent, is_error: !!echo.isError };

  const bad = await client.callTool({ name: 'bash', arguments: { timeout_ms: 5 } });
  out.bad_input = { text: text(bad), is_error: !!bad.isError };

  // A background command: start, read until its first line is there, stop.
  const started = await client.callTool({ name: 'bash_start', arguments: { command: `echo one; exec sleep ${tag}` } });
  const id = started.structuredContent.id;
  const read = await until(20000, async () => {
    const r = await client.callTool({ name: 'bash_read', arguments: { id } });
    return r.structuredContent.stdout.data === 'one\n' ? r : undefined;
  });
  const stopped = await client.callTool({ name: 'bash_stop', arguments: { id } });
  const after = await client.callTool({ name: 'bash_read', arguments: { id } });
  out.background = {
    id,
    read_data: read && read.structuredContent.stdout.data,
    read_running: read && read.structuredContent.running,
    read_next: read && read.structuredContent.next,
    stop_cancelled: stopped.structuredContent.cancelled,
    stop_text: text(stopped),
    after_done: after.structuredContent.done,
  };

  // A call cancelled by the client: once its sleeps run (the command says so in a file),
  // abort it, then watch the server's own process tree until no sleep is left.
  const flag = path.join(scratch, 'sleeps-started');
  const controller = new AbortController();
  const pending = client
    .callTool(
      { name: 'bash', arguments: { command: `sleep ${tag} & setsid sleep ${tag} & touch ${flag}; wait` } },
      undefined,
      { signal: controller.signal, onprogress: () => {} },
    )
    .then(() => 'answered', (err) => String(err && err.name) + ': ' + String(err && err.message));
  const sawFlag = await until(20000, () => (fs.existsSync(flag) ? true : undefined));
  controller.abort('the test cancels it');
  const outcome = await pending;
  const sleeps = async () => {
    const tree = await client.callTool({ name: 'process_tree', arguments: {} });
    return tree.structuredContent.processes.filter((p) => p.comm === 'sleep').length;
  };
  const left = await until(10000, async () => ((await sleeps()) === 0 ? 0 : undefined));
  out.cancel = { started: !!sawFlag, outcome, left_running: left === undefined ? await sleeps() : left };

  const again = await client.callTool({ name: 'bash', arguments: { command: 'echo still serving' } });
  out.after_cancel = text(again);
  out.shell_middle = await shellMiddle(client);

  await client.close();
  process.stdout.write(JSON.stringify(out) + '\n');
}

// longCommand runs a command longer than the client's default request timeout (60 s) through
// bash, with no timeout of the call's own: the answer comes after the server's wait with an id;
// bash_read until exit (each call well under 60 s) follows it to its end, and a read from
// offset 0 gets its whole output.
async function longCommand(client, out) {
  const seconds = Number(process.env.SUBKIT_MCP_LONG_SECONDS || '62');
  const t0 = Date.now();
  const first = await client.callTool({
    name: 'bash',
    arguments: { command: `for i in $(seq 1 ${seconds}); do echo line $i; sleep 1; done; echo done ${tag}` },
  });
  const answeredMs = Date.now() - t0;
  const sc = first.structuredContent || {};
  const id = sc.background && sc.background.id;
  const reads = [];
  let next = sc.background ? sc.background.next : { stdout: 0, stderr: 0 };
  let followed = sc.stdout ? sc.stdout.tail : '';
  let ended = null;
  for (let i = 0; id && !ended && i < 20; i++) {
    const r = await client.callTool({
      name: 'bash_read',
      arguments: { id, stdout_offset: next.stdout, stderr_offset: next.stderr, until: 'exit', wait_ms: 40000 },
    });
    reads.push({ is_error: !!r.isError, running: r.structuredContent.running, text: text(r).slice(-300) });
    followed += r.structuredContent.stdout.data;
    next = r.structuredContent.next;
    if (r.structuredContent.done) ended = r.structuredContent.result;
  }
  const whole = id && (await client.callTool({ name: 'bash_read', arguments: { id, max_bytes: 1048576 } }));
  const listed = await client.callTool({ name: 'bash_list', arguments: {} });
  out.long = {
    first_text: text(first),
    first_is_error: !!first.isError,
    answered_ms: answeredMs,
    id: id || '',
    pid: sc.pid || 0,
    reads,
    followed,
    whole: whole ? whole.structuredContent.stdout.data : '',
    whole_done: whole ? !!whole.structuredContent.done : false,
    exit_code: ended ? ended.exit_code : null,
    total_ms: Date.now() - t0,
    listed: listed.structuredContent.processes,
  };
}

// shellMiddle runs a 200 kB step in a shell session, which leaves the middle of its output out,
// and reads the middle back by offset with shell_read until its one error line turns up.
async function shellMiddle(client) {
  const open = await client.callTool({ name: 'shell_open', arguments: {} });
  const id = open.structuredContent.id;
  const command = 'for i in $(seq 1 10000); do echo "line $i"; done; echo "ERROR: the one line"; ' +
    'for i in $(seq 10001 20000); do echo "line $i"; done';
  const st = (await client.callTool({ name: 'shell_run', arguments: { id, command } })).structuredContent;
  let found = false;
  let reads = 0;
  for (let off = st.omitted_from; off < st.omitted_from + st.omitted && !found && reads < 20; reads++) {
    const r = (await client.callTool({ name: 'shell_read', arguments: { id, offset: off, max_bytes: 50000 } })).structuredContent;
    found = r.text.includes('\nERROR: the one line\n');
    off = r.next;
  }
  await client.callTool({ name: 'shell_close', arguments: { id } });
  return { state: st.state, omitted: st.omitted, step_has_error: st.output.includes('ERROR'), found, reads };
}

main().catch((err) => {
  console.error('client.cjs:', err && err.stack ? err.stack : err);
  process.exit(1);
});
