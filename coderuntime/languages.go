package coderuntime

import (
	"encoding/json"
)

// language is what the subprocess runtime knows about one language.
type language struct {
	interpreter string // default program, searched in the runtime's PATH
	codeFile    string // the code file's name in the work directory
	preludeFile string // the prelude's name in the run directory, or "" when there is none
	// prelude returns the prelude's source for a code file and an error report (openReport).
	prelude func(codePath, errPath string) string
	// args returns the interpreter's arguments.
	args func(preludePath, codePath string) []string
	// env is set under the Request's Env.
	env []string
}

// knownLanguages is the order Languages reports.
func knownLanguages() []Language { return []Language{Python3, Node, Bash} }

func lookupLanguage(l Language) (language, bool) {
	switch l {
	case Python3:
		return language{
			interpreter: "python3", codeFile: "main.py", preludeFile: "prelude.py",
			prelude: func(code, errf string) string {
				return "_SUBKIT_CODE = " + jsonString(code) + "\n_SUBKIT_ERROR = " + jsonString(errf) + "\n" + pythonPrelude
			},
			// The prelude runs the code; the code file is named in the prelude.
			args: func(prelude, _ string) []string { return []string{prelude} },
			// UTF-8 whatever the host locale says, for stdio and open() alike.
			env: []string{"PYTHONUTF8=1", "PYTHONIOENCODING=utf-8"},
		}, true
	case Node:
		return language{
			interpreter: "node", codeFile: "main.js", preludeFile: "prelude.js",
			prelude: func(code, errf string) string {
				return "'use strict';\nconst SUBKIT_CODE = " + jsonString(code) + ";\nconst SUBKIT_ERROR = " + jsonString(errf) + ";\n" + nodePrelude
			},
			args: func(prelude, code string) []string { return []string{"--require", prelude, code} },
		}, true
	case Bash:
		return language{
			interpreter: "bash", codeFile: "main.sh",
			args: func(_, code string) []string { return []string{code} },
		}, true
	}
	return language{}, false
}

// jsonString quotes s as a JSON string, which is also a valid Python and JavaScript literal.
func jsonString(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

// pythonPrelude opens the error report and removes its name, then runs the code file as
// __main__ (compile, then exec in a fresh module), so a syntax error is caught before any of the
// code runs. On an uncaught exception (anything but SystemExit) it writes one JSON object
// {name, value, traceback} to the report through the descriptor it opened, prints the
// traceback to stderr as Python would, and exits 1. Its own frames are cut from the
// traceback, and paths in the work directory are made relative (main.py) in both, and in the
// warnings Python prints. SIGTERM flushes stdout and stderr before the process dies of it, so a
// timed-out run keeps what it printed.
const pythonPrelude = `import sys


def _subkit_main(code_path, err_path):
    import builtins
    import json
    import os
    import signal
    import traceback
    import types

    here = _subkit_main.__code__.co_filename

    # The report is opened, and its name removed, before any of the code runs: what the code
    # later does to that path is never read back.
    try:
        err_fd = os.open(err_path, os.O_WRONLY)
    except OSError:
        err_fd = None
    else:
        try:
            os.unlink(err_path)
        except OSError:
            pass

    def flush_then_die(signum, frame):
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except BaseException:
                pass
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    try:
        signal.signal(signal.SIGTERM, flush_then_die)
    except (AttributeError, OSError, ValueError):
        pass

    import warnings

    work = os.path.dirname(code_path)
    works = sorted({work + os.sep, os.path.realpath(work) + os.sep}, key=len, reverse=True)
    format_warning = warnings.formatwarning

    def relative_formatwarning(message, category, filename, lineno, line=None):
        text = format_warning(message, category, filename, lineno, line)
        for w in works:
            text = text.replace(w, "")
        return text

    warnings.formatwarning = relative_formatwarning

    sys.argv[:] = [code_path]
    if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(here):
        sys.path[0] = os.path.dirname(code_path)  # as for python3 main.py, unless -P
    main = types.ModuleType("__main__")
    main.__file__ = code_path
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    try:
        with open(code_path, "rb") as f:
            source = f.read()
        code = compile(source, code_path, "exec", dont_inherit=True)
        del source
        exec(code, main.__dict__)
    except SystemExit:
        raise
    except BaseException as exc:
        tb = exc.__traceback__
        while tb is not None and tb.tb_frame.f_code.co_filename == here:
            tb = tb.tb_next
        try:
            text = "".join(traceback.format_exception(type(exc), exc, tb))
        except BaseException:
            text = "%s (the traceback could not be formatted)\n" % type(exc).__name__
        try:
            value = str(exc)
        except BaseException:
            value = "<unprintable %s object>" % type(exc).__name__
        for w in works:
            text, value = text.replace(w, ""), value.replace(w, "")
        if len(value) > 8192:
            value = value[:8192] + "..."
        short = text if len(text) <= 65536 else "...\n" + text[-65536:]
        if err_fd is not None:
            try:
                with os.fdopen(err_fd, "w", encoding="utf-8") as f:
                    json.dump({"name": type(exc).__name__, "value": value, "traceback": short}, f)
            except BaseException:
                pass
        try:
            sys.stderr.write(text)
            sys.stderr.flush()
        except BaseException:
            pass
        sys.exit(1)


_subkit_main(_SUBKIT_CODE, _SUBKIT_ERROR)
`

// nodePrelude is loaded with --require before the code file, which node then runs as its main
// module, unchanged. It opens the error report and removes its name. An 'uncaughtException'
// listener sees every exception that is about to end the process, syntax errors of the main
// module and unhandled rejections included, unless the code listens for them itself (then it
// does nothing, and the code's listener decides). It writes one JSON object
// {name, value, traceback} to the report through the descriptor it opened, prints the error to
// stderr as node does (the source line and a caret, the stack, the node version) with the
// paths of the work directory relative, and exits 1, as node does. node's internal frames are
// cut from the stack of the report.
const nodePrelude = `(function subkitPrelude() {
  const fs = require('fs');
  const path = require('path');
  const util = require('util');
  const cap = (s, n, keepEnd) => {
    if (s.length <= n) return s;
    return keepEnd ? '...\n' + s.slice(s.length - n) : s.slice(0, n) + '...';
  };
  const work = path.dirname(SUBKIT_CODE);
  const prefixes = [work + path.sep];
  try {
    const real = fs.realpathSync(work) + path.sep;
    if (!prefixes.includes(real)) prefixes.push(real);
  } catch (e) {
    // The work directory as given.
  }
  const relative = (s) => prefixes.reduce((t, p) => t.split(p).join(''), s);
  // The report is opened, and its name removed, before any of the code runs: what the code
  // later does to that path is never read back.
  let errFd = -1;
  try {
    errFd = fs.openSync(SUBKIT_ERROR, fs.constants.O_WRONLY);
    fs.unlinkSync(SUBKIT_ERROR);
  } catch (e) {
    // No report (or a name left for the host to remove): the run goes on.
  }
  // source returns node's "file:line\nsource line\n   ^\n\n" for the first frame of the stack
  // that is in the code file, or ''.
  const source = (stack) => {
    for (const line of stack.split('\n')) {
      const m = /^\s+at (?:.*\()?(.*):(\d+):(\d+)\)?$/.exec(line);
      if (!m) continue;
      if (!prefixes.some((p) => m[1] === path.join(p, path.basename(SUBKIT_CODE)))) return '';
      try {
        const text = fs.readFileSync(SUBKIT_CODE, 'utf8').split('\n')[Number(m[2]) - 1];
        if (text === undefined) return '';
        return m[1] + ':' + m[2] + '\n' + text + '\n' + ' '.repeat(Math.max(0, Number(m[3]) - 1)) + '^\n\n';
      } catch (e) {
        return '';
      }
    }
    return '';
  };
  process.on('uncaughtException', function subkitUncaught(err) {
    // The code handles its own when it listens too (node's domain module adds a listener that
    // handles nothing).
    if (process.listeners('uncaughtException').some((l) => l !== subkitUncaught && l.name !== 'domainUncaughtExceptionClear')) return;
    let printed;
    try {
      let name, value, traceback;
      if (util.types.isNativeError(err) || err instanceof Error) {
        name = String(err.name || (err.constructor && err.constructor.name) || 'Error');
        value = String(err.message);
        traceback = String(err.stack || '');
        // A syntax error's stack starts with the source line already; others get it added.
        printed = (/^\S[^\n]*:\d+\n/.test(traceback) ? '' : source(traceback)) + traceback;
      } else {
        name = err === null ? 'null' : (typeof err === 'object' && err.constructor && err.constructor.name) || typeof err;
        value = util.inspect(err);
        traceback = '';
        printed = 'Uncaught ' + value;
      }
      traceback = traceback.split('\n').filter((l) => !/^\s+at (.* \()?node:internal\//.test(l)).join('\n');
      if (errFd >= 0) {
        const data = Buffer.from(JSON.stringify({
          name: name, value: cap(relative(value), 8192, false), traceback: cap(relative(traceback), 65536, true),
        }));
        for (let off = 0; off < data.length;) off += fs.writeSync(errFd, data, off);
      }
    } catch (e) {
      // Reporting must never change how the code ends.
    }
    try {
      fs.writeSync(2, relative(printed === undefined ? String(err) : printed) + '\n\nNode.js ' + process.version + '\n');
    } catch (e) {
      // stderr is gone: the exit status still says it.
    }
    process.exit(1);
  });
})();
`
