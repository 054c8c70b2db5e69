// The node session driver of subkit's coderuntime: one interpreter that runs cells sent by the
// host over a private control socket. Node's standard library only.
//
// Usage: node --expose-internals driver.js SOCKET WORKDIR (the working directory is the
// session's directory, where SOCKET is). --expose-internals gives the driver node's own REPL
// rewrite for top-level await (internal/repl/await); without it a cell that awaits runs as an
// async function, whose declarations do not outlive the cell. The token that proves this process
// is the one the host started comes in SUBKIT_SESSION_TOKEN, removed before any cell runs.
//
// Protocol: as the python3 driver's (frames of a 4-byte big-endian length and UTF-8 JSON;
// execute/probe from the host; hello/result/background_error/done/probe_ok from the driver; the
// end marker written to stdout and stderr before "done"), with two more for interrupts: the host
// sends {"type":"interrupt","cell"}, handled at once (it rejects what the cell awaits), and the
// driver sends {"type":"sync_done","cell"} when a cell's synchronous part has ended, before which
// only SIGINT (vm's breakOnSigint) can stop it; a SIGINT is acted on only for the cell named by
// the last interrupt message.
//
// Which cell an uncaught exception belongs to: every async resource (timer, immediate, tick,
// promise, socket, fs request, ...) is tagged, as it is created, with the count of the cell
// whose code was running then: the tag of the resource that created it, which for the cell's
// synchronous part is the cell's own count. An exception a callback throws (or an unhandled
// rejection, by its promise's tag) is the running cell's error when the tag is the running
// cell's, or when it has no tag and a cell runs (nothing names an earlier one); otherwise it is a
// background error, sent at once with the tag (0: none) and reported with the cell running or
// the next one, which keeps its own result. So a timer an earlier cell set that throws while a
// later cell runs is never that cell's error.
'use strict';
(function subkitSession() {
  const fs = require('fs');
  const net = require('net');
  const path = require('path');
  const util = require('util');
  const vm = require('vm');
  const asyncHooks = require('async_hooks');
  const { createRequire } = require('module');

  const MARK_HEAD = '\x1e\x1fsubkit-cell-end ';
  const MARK_TAIL = '\x1f\x1e';
  const MAX_FRAME = 64 << 20;
  const MAX_BUNDLE = 32 << 20;
  const MAX_TEXT = 1 << 20;
  const here = __filename;
  const [sockName, workArg] = process.argv.slice(2);
  const work = path.resolve(workArg);
  const sessionDir = process.cwd();
  const token = process.env.SUBKIT_SESSION_TOKEN || '';
  delete process.env.SUBKIT_SESSION_TOKEN;
  process.argv.splice(1);

  let processTopLevelAwait = null;
  try {
    ({ processTopLevelAwait } = require('internal/repl/await'));
  } catch (e) {
    // Without --expose-internals: awaiting cells run as async functions.
  }

  // Private directories, longest first, as they may be spelled in paths.
  const privateDirs = [];
  for (const d of [work, sessionDir]) {
    for (const p of [d, safeRealpath(d)]) {
      if (!privateDirs.includes(p + path.sep)) privateDirs.push(p + path.sep);
    }
  }
  privateDirs.sort((a, b) => b.length - a.length);
  function safeRealpath(p) {
    try {
      return fs.realpathSync(p);
    } catch (e) {
      return p;
    }
  }
  function relative(text) {
    for (const p of privateDirs) text = text.split(p).join('');
    return text;
  }

  // The primordials the driver needs, taken before any cell can replace them.
  const stringify = JSON.stringify;
  const parse = JSON.parse;
  const inspect = util.inspect;
  const stdout = process.stdout;
  const stderr = process.stderr;

  let cell = null; // { id, count, errors: [], rejected: Set } while a cell runs
  let interrupt = null; // rejects the awaiting cell
  let interruptFor = null; // the id of the cell the session asked to interrupt

  // The cell tags of async resources (see the top of the file). lastEntered is the tag of the
  // last callback that began: node reports some exceptions (a queueMicrotask callback's) after
  // leaving the callback's context.
  const CELL = Symbol('subkit.cell');
  let lastEntered;
  const executionAsyncResource = asyncHooks.executionAsyncResource;
  const executionAsyncId = asyncHooks.executionAsyncId;
  // An exception in a hook would end the process: the hooks never let one out.
  asyncHooks
    .createHook({
      init(asyncId, type, triggerAsyncId, resource) {
        try {
          const n = executionAsyncResource()[CELL];
          if (n !== undefined) resource[CELL] = n;
        } catch (e) {
          // A frozen resource stays untagged.
        }
      },
      before() {
        try {
          lastEntered = executionAsyncResource()[CELL];
        } catch (e) {
          lastEntered = undefined;
        }
      },
    })
    .enable();
  // runTagged runs f with the current resource tagged as cell n's, as AsyncLocalStorage.run does.
  function runTagged(n, f) {
    const r = executionAsyncResource();
    const old = r[CELL];
    r[CELL] = n;
    try {
      return f();
    } finally {
      r[CELL] = old;
    }
  }
  function currentTag() {
    return executionAsyncId() === 0 ? lastEntered : executionAsyncResource()[CELL];
  }
  // uncaught takes an exception no code handled: the running cell's error, or a background one.
  function uncaught(err, tag, promise) {
    if (cell && (tag === cell.count || tag === undefined)) {
      cell.errors.push(err);
      if (promise) cell.rejected.add(promise);
      return;
    }
    let error;
    try {
      error = codeError(err);
    } catch (e) {
      error = { name: 'Error', value: '(an exception that could not be described)', traceback: '' };
    }
    send({ type: 'background_error', count: tag || 0, error });
  }

  process.on('SIGINT', () => {
    // During a cell's synchronous part, vm's breakOnSigint handles the signal. One that lands
    // after that part ends the awaiting cell the session asked to interrupt (the interrupt
    // message came first); any other is ignored, so a late one never reaches a later cell.
    if (interrupt && cell && interruptFor === cell.id) interrupt(interruptedError());
  });
  function interruptedError() {
    const e = new Error('Script execution was interrupted by `SIGINT`');
    e.code = 'ERR_SCRIPT_EXECUTION_INTERRUPTED';
    return e;
  }
  // The code handles its own when it listens too (node's domain module adds a listener that
  // handles nothing).
  const codeListens = (event, ours) =>
    process.listeners(event).some((l) => l !== ours && l.name !== 'domainUncaughtExceptionClear');
  process.on('uncaughtException', function onUncaught(err) {
    if (codeListens('uncaughtException', onUncaught)) return;
    uncaught(err, currentTag());
  });
  process.on('unhandledRejection', function onRejection(reason, promise) {
    if (codeListens('unhandledRejection', onRejection)) return;
    uncaught(reason, promise[CELL], promise);
  });
  function describe(err) {
    if (err instanceof Error || util.types.isNativeError(err)) return String(err.stack || err);
    return inspect(err);
  }

  const sock = net.connect(sockName);
  let pending = [];
  let pendingLen = 0;
  let queue = Promise.resolve();

  function send(msg) {
    let body = Buffer.from(stringify(msg), 'utf8');
    if (body.length > MAX_FRAME) return false;
    const head = Buffer.alloc(4);
    head.writeUInt32BE(body.length, 0);
    sock.write(Buffer.concat([head, body]));
    return true;
  }

  sock.on('connect', () => {
    process.chdir(work);
    globalThis.require = createRequire(path.join(work, '<cell>'));
    globalThis.display = display;
    send({ type: 'hello', token, pid: process.pid, version: process.version });
  });
  sock.on('data', (chunk) => {
    pending.push(chunk);
    pendingLen += chunk.length;
    for (;;) {
      if (pendingLen < 4) return;
      let buf = Buffer.concat(pending, pendingLen);
      const n = buf.readUInt32BE(0);
      if (n > MAX_FRAME) process.exit(70);
      if (buf.length < 4 + n) {
        pending = [buf];
        return;
      }
      const msg = parse(buf.subarray(4, 4 + n).toString('utf8'));
      buf = buf.subarray(4 + n);
      pending = buf.length ? [buf] : [];
      pendingLen = buf.length;
      if (msg.type === 'interrupt') {
        // At once, not behind the running cell: it rejects what the cell awaits.
        interruptFor = msg.cell;
        if (interrupt && cell && cell.id === msg.cell) interrupt(interruptedError());
        continue;
      }
      queue = queue.then(() => handle(msg)).catch((e) => fs.writeSync(2, 'subkit session driver: ' + describe(e) + '\n'));
    }
  });
  sock.on('error', () => {});
  sock.on('close', () => process.exit(0));

  async function handle(msg) {
    if (msg.type === 'execute') await runCell(msg);
    else if (msg.type === 'probe') {
      vm.runInThisContext('undefined');
      send({ type: 'probe_ok', id: msg.id });
    }
  }

  // MIME bundles.
  const jupyterDisplay = Symbol.for('Jupyter.display');
  const binary = new Set(['image/png', 'image/jpeg', 'application/pdf']);
  function encode(mime, v) {
    if (v === undefined || v === null) return undefined;
    if (binary.has(mime) && (Buffer.isBuffer(v) || v instanceof Uint8Array)) return Buffer.from(v).toString('base64');
    if (typeof v === 'string') return v;
    if (mime === 'application/json' || mime.endsWith('+json')) return stringify(v);
    if (Buffer.isBuffer(v) || v instanceof Uint8Array) return Buffer.from(v).toString('utf8');
    return String(v);
  }
  function capText(s) {
    return s.length > MAX_TEXT ? s.slice(0, MAX_TEXT) + `\n... (${s.length - MAX_TEXT} more characters)` : s;
  }
  function normalize(data) {
    const out = {};
    for (const [k, v] of Object.entries(data || {})) {
      const e = encode(String(k), v);
      if (e !== undefined) out[String(k)] = e;
    }
    if (!('text/plain' in out)) out['text/plain'] = `<display data: ${Object.keys(out).sort().join(', ')}>`;
    return out;
  }
  function bundle(v) {
    let data = {};
    if (v !== null && (typeof v === 'object' || typeof v === 'function')) {
      const f = v[jupyterDisplay];
      if (typeof f === 'function') {
        try {
          data = normalize(f.call(v));
          if (data['text/plain'].startsWith('<display data:')) delete data['text/plain'];
        } catch (e) {
          data = {};
        }
      }
    }
    if (!('text/plain' in data)) {
      try {
        data['text/plain'] = inspect(v);
      } catch (e) {
        data['text/plain'] = `<${typeof v} (inspect failed)>`;
      }
    }
    data['text/plain'] = capText(data['text/plain']);
    let size = 0;
    for (const k in data) size += data[k].length;
    if (size > MAX_BUNDLE) {
      data = { 'text/plain': data['text/plain'] + `\n(other MIME types left out: ${size} bytes, above the limit)` };
    }
    return data;
  }
  function publish(data, main, cellID) {
    const msg = { type: 'result', cell: cellID || (cell ? cell.id : null), main: !!main, mime: data };
    if (!cellID) {
      const tag = currentTag();
      if (tag !== undefined && (!cell || tag !== cell.count)) msg.count = tag; // an earlier cell's callback
    }
    if (!send(msg)) {
      msg.mime = { 'text/plain': '(a result too large to send)' };
      send(msg);
    }
  }

  // display(value) shows a value as a rich result: text/plain (util.inspect), and the MIME
  // bundle its [Symbol.for('Jupyter.display')]() method returns. display(bundle, {raw: true})
  // shows an object {mime: data} as it is. display.html(s), .markdown(s), .svg(s), .png(data),
  // .jpeg(data), .json(value), .latex(s) show one MIME type (data: a Buffer or base64).
  function display(value, options) {
    if (options && options.raw) publish(normalize(value));
    else publish(bundle(value));
  }
  const one = (mime) => (data) => publish(normalize({ [mime]: data }));
  display.html = one('text/html');
  display.markdown = one('text/markdown');
  display.svg = one('image/svg+xml');
  display.png = one('image/png');
  display.jpeg = one('image/jpeg');
  display.json = one('application/json');
  display.latex = one('text/latex');

  // Errors: the cell's frames only, private paths relative.
  function codeError(err) {
    let name;
    let value;
    let traceback;
    if (err instanceof Error || util.types.isNativeError(err)) {
      name = String(err.name || (err.constructor && err.constructor.name) || 'Error');
      value = String(err.message);
      traceback = String(err.stack || '');
    } else {
      name = err === null ? 'null' : (typeof err === 'object' && err.constructor && err.constructor.name) || typeof err;
      value = inspect(err);
      traceback = 'Uncaught ' + value;
    }
    traceback = traceback
      .split('\n')
      .filter((l) => !/^\s+at /.test(l) || !(/\(node:|at node:|^\s+at new Script /.test(l) || l.includes(here)))
      .join('\n');
    value = relative(value);
    traceback = relative(traceback);
    if (value.length > 8192) value = value.slice(0, 8192) + '...';
    if (traceback.length > 65536) traceback = '...\n' + traceback.slice(traceback.length - 65536);
    return { name, value, traceback };
  }

  function isObjectLiteral(code) {
    return /^\s*\{/.test(code) && /\}\s*$/.test(code);
  }

  function compile(code, filename) {
    const opts = { filename, importModuleDynamically: vm.constants && vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER };
    if (processTopLevelAwait && /\bawait\b/.test(code)) {
      let wrapped = null;
      try {
        wrapped = processTopLevelAwait(code);
      } catch (e) {
        // Not valid with await either: the plain compile below reports the error.
      }
      if (wrapped !== null) {
        try {
          return { script: new vm.Script(wrapped, opts), awaits: true };
        } catch (e) {
          // As below.
        }
      }
    }
    if (isObjectLiteral(code)) {
      try {
        return { script: new vm.Script('(' + code.trim() + ')\n', opts), awaits: false };
      } catch (e) {
        // A block, not an object literal.
      }
    }
    try {
      return { script: new vm.Script(code, opts), awaits: false };
    } catch (e) {
      if (!processTopLevelAwait && /\bawait\b/.test(code) && e instanceof SyntaxError) {
        // No top-level await rewrite: run the cell as an async function body.
        return { script: new vm.Script('(async () => {\n' + code + '\n})()', opts), awaits: false, async: true };
      }
      throw e;
    }
  }

  function interruptible(p) {
    return new Promise((resolve, reject) => {
      interrupt = reject;
      // An interrupt asked for before the cell got here (with its execute, or during its
      // synchronous part) ends it now.
      if (cell && interruptFor === cell.id) reject(interruptedError());
      Promise.resolve(p).then(resolve, reject);
    }).finally(() => {
      interrupt = null;
    });
  }

  function writeMarker(stream, nonce) {
    return new Promise((resolve) => {
      try {
        stream.write(MARK_HEAD + nonce + MARK_TAIL, (err) => resolve(!err));
      } catch (e) {
        resolve(false);
      }
    });
  }

  async function runCell(msg) {
    const c = { id: msg.id, count: msg.count, errors: [], rejected: new Set() };
    cell = c;
    let error = null;
    let value;
    try {
      const { script, awaits, async } = compile(msg.code, `<cell-${msg.count}>`);
      try {
        value = runTagged(msg.count, () => script.runInThisContext({ breakOnSigint: true }));
      } finally {
        send({ type: 'sync_done', cell: msg.id }); // from here on a message interrupts it, not SIGINT
      }
      if (awaits) {
        const r = await interruptible(value);
        value = r ? r.value : undefined;
      } else if (async) {
        value = await interruptible(value);
      }
    } catch (e) {
      error = e;
    }
    // Let the cell's unhandled rejections and callbacks' exceptions be seen as the cell's.
    await new Promise((resolve) => setImmediate(resolve));
    cell = null; // from here on, exceptions of its callbacks are background errors
    if (error === null && c.errors.length > 0) error = c.errors[0];
    if (error === null && value !== undefined && !c.rejected.has(value)) {
      globalThis._ = value;
      try {
        publish(bundle(value), true, c.id);
      } catch (e) {
        error = e;
      }
    }
    const marks = [await writeMarker(stdout, msg.nonce), await writeMarker(stderr, msg.nonce)];
    send({ type: 'done', cell: msg.id, error: error === null ? null : codeError(error), marks });
  }
})();
