//go:build unix

package coderuntime_test

import (
	"context"
	"encoding/base64"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/coderuntime"
	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/subprocess"
)

// session opens a session of lang marked with mark, closed at cleanup.
func session(t *testing.T, rt *coderuntime.Runtime, mark string, cfg coderuntime.SessionConfig) coderuntime.Session {
	t.Helper()
	cfg.Env = append(cfg.Env, markEnv(mark)...)
	s, err := rt.NewSession(ctxT(t, time.Minute), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Close()) })
	return s
}

// cell runs code with cb and requires no Go error.
func cell(t *testing.T, s coderuntime.Session, code string, cb coderuntime.Callbacks) coderuntime.Execution {
	t.Helper()
	ex, err := s.Run(ctxT(t, time.Minute), coderuntime.Cell{Code: code, Timeout: time.Minute}, cb)
	require.NoError(t, err)
	return ex
}

// okCell runs code and requires that it raised nothing.
func okCell(t *testing.T, s coderuntime.Session, code string) coderuntime.Execution {
	t.Helper()
	ex := cell(t, s, code, coderuntime.Callbacks{})
	require.Nil(t, ex.Error, "%q: %+v; stderr %s", code, ex.Error, ex.Stderr.Tail)
	require.False(t, ex.Restarted || ex.Interrupted, "%q: %+v", code, ex)
	return ex
}

func mainResult(t *testing.T, ex coderuntime.Execution) coderuntime.CellResult {
	t.Helper()
	for _, r := range ex.Results {
		if r.Main {
			return r
		}
	}
	t.Fatalf("no main result in %+v", ex)
	return coderuntime.CellResult{}
}

// matplotlibPython is a python3 that imports matplotlib (Debian's python3-matplotlib, which
// make deps installs, is /usr/bin/python3's), or "".
func matplotlibPython() string {
	for _, p := range []string{realPython(), "/usr/bin/python3"} {
		if p != "" && exec.Command(p, "-c", "import matplotlib").Run() == nil {
			return p
		}
	}
	return ""
}

func TestSessionMatplotlibFigure(t *testing.T) {
	py := matplotlibPython()
	if py == "" {
		t.Skip("no python3 here imports matplotlib: make deps installs python3-matplotlib")
	}
	rt := newRuntime(t, coderuntime.Config{Interpreters: map[coderuntime.Language]string{coderuntime.Python3: py}})
	mark := marked(t)
	s := session(t, rt, mark, coderuntime.SessionConfig{Language: coderuntime.Python3})

	// A figure left open comes back at the end of the cell, after the main result.
	ex := okCell(t, s, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3], [2, 4, 1])\nplt.title('t')\n")
	require.Len(t, ex.Results, 2, "%+v", ex.Results)
	assert.True(t, ex.Results[0].Main)
	assert.Equal(t, "Text(0.5, 1.0, 't')", ex.Results[0].MIME["text/plain"])
	assert.False(t, ex.Results[1].Main)
	assert.True(t, isPNG(ex.Results[1]), "the figure is an image/png result")
	assert.Contains(t, ex.Results[1].MIME["text/plain"], "Figure")

	// plt.show() shows it then; the cell's end has nothing left to show.
	ex = okCell(t, s, "plt.plot([1, 2])\nplt.show()\nprint('shown')\n")
	require.Len(t, ex.Results, 1)
	assert.True(t, isPNG(ex.Results[0]))
	assert.Equal(t, "shown\n", ex.Stdout.Tail)
	assert.Empty(t, ex.Stderr.Tail, "no warning about a non-interactive backend")

	// A figure as the trailing expression is the main result, shown once.
	ex = okCell(t, s, "fig, ax = plt.subplots()\nax.bar([1, 2], [3, 4])\nfig\n")
	require.Len(t, ex.Results, 1)
	assert.True(t, ex.Results[0].Main)
	assert.True(t, isPNG(ex.Results[0]))
}

// isPNG reports whether r holds a PNG image.
func isPNG(r coderuntime.CellResult) bool {
	data, err := base64.StdEncoding.DecodeString(r.MIME["image/png"])
	return err == nil && strings.HasPrefix(string(data), "\x89PNG\r\n\x1a\n")
}

func TestSessionMatplotlibAnyBackend(t *testing.T) {
	py := matplotlibPython()
	if py == "" {
		t.Skip("no python3 here imports matplotlib: make deps installs python3-matplotlib")
	}
	rt := newRuntime(t, coderuntime.Config{Interpreters: map[coderuntime.Language]string{coderuntime.Python3: py}})
	mark := marked(t)
	// No display, whatever the host has: a GUI backend cannot open.
	s := session(t, rt, mark, coderuntime.SessionConfig{Language: coderuntime.Python3, Env: []string{"DISPLAY=", "WAYLAND_DISPLAY="}})

	// Agg, chosen by the code: plt.show() still gives the figure.
	ex := okCell(t, s, "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\nplt.plot([1, 2])\nplt.show()\nprint('after show')\n")
	require.Len(t, ex.Results, 1, "%+v", ex.Results)
	assert.True(t, isPNG(ex.Results[0]), "plt.show() under Agg gives the figure as image/png")
	assert.Equal(t, "after show\n", ex.Stdout.Tail)
	assert.Empty(t, ex.Stderr.Tail)
	assert.Empty(t, ex.Notes)
	ex = okCell(t, s, "plt.get_backend().lower()\n")
	assert.Equal(t, "'agg'", mainResult(t, ex).MIME["text/plain"], "the code's backend stays")

	// A figure left open at the end of the cell, under Agg too.
	ex = okCell(t, s, "plt.plot([3, 1]);\n")
	require.Len(t, ex.Results, 1)
	assert.True(t, isPNG(ex.Results[0]))

	// A GUI backend that cannot open here gives way to the session's, and the cell says so.
	ex = okCell(t, s, "matplotlib.use('TkAgg')\nplt.plot([1, 3])\nplt.show()\n")
	require.Len(t, ex.Results, 1, "%+v", ex.Results)
	assert.True(t, isPNG(ex.Results[0]))
	require.Len(t, ex.Notes, 1)
	assert.Contains(t, ex.Notes[0], "'TkAgg' cannot open here")
	assert.Contains(t, ex.Notes[0], "image/png results")

	// A figure that cannot be rendered: no result, and a note saying why and what to do.
	ex = okCell(t, s, `import matplotlib.artist
class Broken(matplotlib.artist.Artist):
    def draw(self, renderer):
        raise RuntimeError("cannot draw this")
fig = plt.figure()
fig.add_artist(Broken())
plt.show()
`)
	assert.Empty(t, ex.Results)
	require.Len(t, ex.Notes, 1)
	assert.Contains(t, ex.Notes[0], "could not be rendered as PNG")
	assert.Contains(t, ex.Notes[0], "RuntimeError: cannot draw this")
	assert.Contains(t, ex.Notes[0], "display(fig)")
	ex = okCell(t, s, "1\n")
	assert.Empty(t, ex.Notes, "notes are the cell's")

	// A GUI backend chosen before pyplot is imported, in a fresh interpreter.
	require.NoError(t, s.Restart(ctxT(t, time.Minute)))
	ex = okCell(t, s, "import matplotlib\nmatplotlib.use('QtAgg')\nimport matplotlib.pyplot as plt\nplt.plot([2, 2])\nplt.show()\n")
	require.Len(t, ex.Results, 1, "%+v", ex.Results)
	assert.True(t, isPNG(ex.Results[0]))
	require.Len(t, ex.Notes, 1)
	assert.Contains(t, ex.Notes[0], "'QtAgg' cannot open here")

	// A backend named in the session's environment.
	s2 := session(t, rt, mark, coderuntime.SessionConfig{Language: coderuntime.Python3, Env: []string{"MPLBACKEND=agg"}})
	ex = okCell(t, s2, "import matplotlib.pyplot as plt\nplt.plot([1, 2]);\nplt.show()\n")
	require.Len(t, ex.Results, 1, "%+v", ex.Results)
	assert.True(t, isPNG(ex.Results[0]))

	// A third-party backend shows the figures its way first; what it leaves open is returned.
	lib := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(lib, "printing_backend.py"), []byte(
		"from matplotlib.backends.backend_agg import FigureCanvasAgg as FigureCanvas\n"+
			"from matplotlib.backend_bases import FigureManagerBase as FigureManager\n\n\n"+
			"def show(*args, **kwargs):\n    print('shown its way')\n"), 0o600))
	s3 := session(t, rt, mark, coderuntime.SessionConfig{Language: coderuntime.Python3,
		Env: []string{"MPLBACKEND=module://printing_backend", "PYTHONPATH=" + lib}})
	ex = okCell(t, s3, "import matplotlib.pyplot as plt\nplt.plot([1, 2]);\nplt.show()\n")
	assert.Equal(t, "shown its way\n", ex.Stdout.Tail)
	require.Len(t, ex.Results, 1, "%+v", ex.Results)
	assert.True(t, isPNG(ex.Results[0]))
}

func TestSessionDriverNeedsNoExtras(t *testing.T) {
	rt := newRuntime(t, coderuntime.Config{})
	needs(t, rt, coderuntime.Python3)
	mark := marked(t)
	s := session(t, rt, mark, coderuntime.SessionConfig{Language: coderuntime.Python3})
	ex := okCell(t, s, "import sys\n[m for m in ('matplotlib', 'IPython', 'asyncio') if m in sys.modules]\n")
	assert.Equal(t, "[]", mainResult(t, ex).MIME["text/plain"], "the driver imports nothing it does not need")
	ex = okCell(t, s, "import os\nos.environ.get('MPLBACKEND')\n")
	assert.Equal(t, "'module://subkit_inline_backend'", mainResult(t, ex).MIME["text/plain"])
}

// A stand-in for IPython: its display() prints, and HTML offers _repr_html_ as IPython's does.
var fakeIPython = map[string]string{
	"IPython/__init__.py":               "",
	"IPython/core/__init__.py":          "",
	"IPython/core/display_functions.py": "def display(*objs, **kwargs):\n    print('the fake display')\n\n\ndef publish_display_data(data, metadata=None, **kwargs):\n    print('the fake publish')\n",
	"IPython/display.py":                "from IPython.core.display_functions import display, publish_display_data\n\n\nclass HTML:\n    def __init__(self, data):\n        self.data = data\n\n    def _repr_html_(self):\n        return self.data\n",
}

func TestSessionIPythonDisplay(t *testing.T) {
	rt := newRuntime(t, coderuntime.Config{})
	needs(t, rt, coderuntime.Python3)
	mark := marked(t)
	lib := t.TempDir()
	for name, src := range fakeIPython {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(lib, name)), 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(lib, name), []byte(src), 0o600))
	}
	s := session(t, rt, mark, coderuntime.SessionConfig{Language: coderuntime.Python3, Env: []string{"PYTHONPATH=" + lib}})
	ex := okCell(t, s, "from IPython.display import display, HTML, publish_display_data\n"+
		"display(HTML('<i>x</i>'))\npublish_display_data({'text/markdown': '*y*'})\n")
	assert.Empty(t, ex.Stdout.Tail, "IPython's display functions are the session's")
	require.Len(t, ex.Results, 2)
	assert.Equal(t, "<i>x</i>", ex.Results[0].MIME["text/html"])
	assert.Contains(t, ex.Results[0].MIME["text/plain"], "HTML object")
	assert.Equal(t, "*y*", ex.Results[1].MIME["text/markdown"])
}

func TestSessionReprProtocol(t *testing.T) {
	rt := newRuntime(t, coderuntime.Config{})
	needs(t, rt, coderuntime.Python3)
	mark := marked(t)
	s := session(t, rt, mark, coderuntime.SessionConfig{Language: coderuntime.Python3})
	ex := okCell(t, s, `class Rich:
    def _repr_html_(self):
        return "<b>rich</b>"

    def _repr_png_(self):
        return b"\x89PNG fake"

    def _repr_json_(self):
        return {"a": [1, 2]}

    def _repr_markdown_(self):
        raise RuntimeError("a broken formatter is skipped")

    def __repr__(self):
        return "Rich()"


Rich()
`)
	m := mainResult(t, ex).MIME
	assert.Equal(t, "Rich()", m["text/plain"])
	assert.Equal(t, "<b>rich</b>", m["text/html"])
	assert.Equal(t, base64.StdEncoding.EncodeToString([]byte("\x89PNG fake")), m["image/png"], "binary data is base64")
	assert.JSONEq(t, `{"a": [1, 2]}`, m["application/json"])
	assert.NotContains(t, m, "text/markdown")

	ex = okCell(t, s, "None\n")
	assert.Empty(t, ex.Results, "None is no result, as in IPython")
	ex = okCell(t, s, "1 + 1;\n")
	assert.Empty(t, ex.Results, "a trailing semicolon hides the value, as in IPython")
	ex = okCell(t, s, "_\n")
	assert.Equal(t, "Rich()", mainResult(t, ex).MIME["text/plain"], "_ is the last main result")
}

func TestSessionPythonSystemExitAndKeyboardInterruptHandler(t *testing.T) {
	rt := newRuntime(t, coderuntime.Config{})
	needs(t, rt, coderuntime.Python3)
	mark := marked(t)
	s := session(t, rt, mark, coderuntime.SessionConfig{Language: coderuntime.Python3, Grace: time.Minute})
	okCell(t, s, "x = 1\n")
	ex := cell(t, s, "import sys\nsys.exit(4)\n", coderuntime.Callbacks{})
	require.NotNil(t, ex.Error, "SystemExit ends the cell, not the session")
	assert.Equal(t, "SystemExit", ex.Error.Name)
	assert.Equal(t, "4", ex.Error.Value)
	assert.False(t, ex.Restarted)

	// The default SIGINT handler set by the code is replaced after the cell, so an interrupt
	// between cells never breaks the channel; the next interrupt still works.
	okCell(t, s, "import signal\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n")
	ex, err := s.Run(ctxT(t, time.Minute), coderuntime.Cell{Code: "while True:\n    pass\n", Timeout: time.Second}, coderuntime.Callbacks{})
	require.NoError(t, err)
	assert.True(t, ex.Interrupted)
	assert.False(t, ex.Restarted)
	require.NotNil(t, ex.Error)
	assert.Equal(t, "KeyboardInterrupt", ex.Error.Name)
	assert.Equal(t, "1", mainResult(t, okCell(t, s, "x\n")).MIME["text/plain"])
}

func TestSessionNodeSpecifics(t *testing.T) {
	rt := newRuntime(t, coderuntime.Config{})
	needs(t, rt, coderuntime.Node)
	mark := marked(t)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "local.js"), []byte("module.exports = 40;\n"), 0o600))
	s := session(t, rt, mark, coderuntime.SessionConfig{Language: coderuntime.Node, Dir: dir})

	okCell(t, s, "let a = 1\n")
	assert.Equal(t, "2", mainResult(t, okCell(t, s, "a + 1\n")).MIME["text/plain"], "a let of one cell is seen by the next")

	ex := okCell(t, s, "require('./local') + 2\n")
	assert.Equal(t, "42", mainResult(t, ex).MIME["text/plain"], "require resolves from the working directory")
	ex = okCell(t, s, "{a: 1}\n")
	assert.Equal(t, "{ a: 1 }", mainResult(t, ex).MIME["text/plain"], "an object literal, as node's REPL reads it")
	ex = okCell(t, s, "display.png(Buffer.from('png bytes'));\ndisplay.json({b: 2});\n")
	require.Len(t, ex.Results, 2)
	assert.Equal(t, base64.StdEncoding.EncodeToString([]byte("png bytes")), ex.Results[0].MIME["image/png"])
	assert.JSONEq(t, `{"b":2}`, ex.Results[1].MIME["application/json"])
	ex = okCell(t, s, "({[Symbol.for('Jupyter.display')]() { return {'text/html': '<p>j</p>'}; }})\n")
	assert.Equal(t, "<p>j</p>", mainResult(t, ex).MIME["text/html"], "the Jupyter.display protocol")

	ex = cell(t, s, "throw 'a string';\n", coderuntime.Callbacks{})
	require.NotNil(t, ex.Error)
	assert.Equal(t, "string", ex.Error.Name)
	assert.Equal(t, "'a string'", ex.Error.Value)

	// An exception a timer throws between cells is a background error of the next cell, with
	// relative paths; the session goes on.
	fired := filepath.Join(t.TempDir(), "fired")
	okCell(t, s, "setTimeout(() => { require('fs').writeFileSync("+jsonQuote(fired)+", ''); throw new Error('later'); }, 0);\n")
	for {
		if _, err := os.Stat(fired); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	ex = okCell(t, s, "1\n")
	assert.Equal(t, "1", mainResult(t, ex).MIME["text/plain"])
	assert.Empty(t, ex.Stderr.Tail)
	require.Len(t, ex.BackgroundErrors, 1)
	be := ex.BackgroundErrors[0]
	assert.Equal(t, 8, be.Cell)
	assert.Equal(t, "later", be.Value)
	assert.True(t, strings.HasPrefix(be.Traceback, "Error: later\n    at Timeout._onTimeout (<cell-8>"), be.Traceback)
	assert.NotContains(t, be.Traceback, dir, "paths are relative")
}

func TestSessionNodeBackgroundErrors(t *testing.T) {
	rt := newRuntime(t, coderuntime.Config{})
	needs(t, rt, coderuntime.Node)
	mark := marked(t)
	s := session(t, rt, mark, coderuntime.SessionConfig{Language: coderuntime.Node})
	// untilUncaught waits until an uncaught exception has been taken (a monitor listener does
	// not handle it).
	const untilUncaught = "await new Promise((resolve) => process.once('uncaughtExceptionMonitor', () => setImmediate(resolve)));\n"

	// A timer of cell 1 throws while cell 2 runs: cell 2 keeps its output and result.
	okCell(t, s, "setTimeout(() => { throw new Error('late'); }, 200);\n")
	ex := okCell(t, s, "console.log('own');\n"+untilUncaught+"'own result'\n")
	assert.Equal(t, "'own result'", mainResult(t, ex).MIME["text/plain"])
	assert.Equal(t, "own\n", ex.Stdout.Tail)
	require.Len(t, ex.BackgroundErrors, 1)
	assert.Equal(t, 1, ex.BackgroundErrors[0].Cell)
	assert.Equal(t, "Error", ex.BackgroundErrors[0].Name)
	assert.Equal(t, "late", ex.BackgroundErrors[0].Value)

	// What a callback of cell 3's timer schedules is cell 3's too, however late it runs.
	okCell(t, s, "setTimeout(() => { setImmediate(() => { process.nextTick(() => { throw new RangeError('nested'); }); }); }, 100);\n")
	ex = okCell(t, s, untilUncaught+"4\n")
	assert.Equal(t, "4", mainResult(t, ex).MIME["text/plain"])
	require.Len(t, ex.BackgroundErrors, 1)
	assert.Equal(t, 3, ex.BackgroundErrors[0].Cell)
	assert.Equal(t, "RangeError", ex.BackgroundErrors[0].Name)

	// A promise of cell 5 that cell 6 rejects, and nothing handles: cell 5's. The rejection is
	// taken at the end of cell 6's synchronous part, before the immediate it awaits.
	okCell(t, s, "let rejectLater;\nconst pending = new Promise((_, reject) => { rejectLater = reject; });\n")
	ex = okCell(t, s, "rejectLater(new Error('rejected late'));\nawait new Promise((resolve) => setImmediate(resolve));\n6\n")
	assert.Equal(t, "6", mainResult(t, ex).MIME["text/plain"])
	require.Len(t, ex.BackgroundErrors, 1)
	assert.Equal(t, 5, ex.BackgroundErrors[0].Cell)
	assert.Equal(t, "rejected late", ex.BackgroundErrors[0].Value)

	// A callback the running cell scheduled that throws before it ends is its own error.
	ex = cell(t, s, "setTimeout(() => { throw new Error('mine'); }, 0);\n"+untilUncaught+"7\n", coderuntime.Callbacks{})
	require.NotNil(t, ex.Error)
	assert.Equal(t, "mine", ex.Error.Value)
	assert.Empty(t, ex.BackgroundErrors)

	// A queueMicrotask callback of an earlier cell's timer: node reports its exception outside
	// any callback's context; it is still the earlier cell's.
	okCell(t, s, "setTimeout(() => queueMicrotask(() => { throw new Error('micro'); }), 100);\n")
	ex = okCell(t, s, untilUncaught+"10\n")
	assert.Equal(t, "10", mainResult(t, ex).MIME["text/plain"])
	require.Len(t, ex.BackgroundErrors, 1)
	assert.Equal(t, 8, ex.BackgroundErrors[0].Cell)
	assert.Equal(t, "micro", ex.BackgroundErrors[0].Value)

	// What a timer of cell 10 displays while cell 11 runs says it is cell 10's.
	okCell(t, s, "const timerDone = new (require('events'))();\nsetTimeout(() => { display('from a timer'); timerDone.emit('done'); }, 100);\n")
	ex = okCell(t, s, "display('mine');\nawait new Promise((resolve) => timerDone.once('done', resolve));\n'main'\n")
	require.Len(t, ex.Results, 3)
	assert.Equal(t, "'mine'", ex.Results[0].MIME["text/plain"])
	assert.Zero(t, ex.Results[0].FromCell)
	assert.Equal(t, "'from a timer'", ex.Results[1].MIME["text/plain"])
	assert.Equal(t, 10, ex.Results[1].FromCell)
	assert.True(t, ex.Results[2].Main)
	assert.Zero(t, ex.Results[2].FromCell)
}

func TestSessionPythonThreadErrors(t *testing.T) {
	rt := newRuntime(t, coderuntime.Config{})
	needs(t, rt, coderuntime.Python3)
	mark := marked(t)
	s := session(t, rt, mark, coderuntime.SessionConfig{Language: coderuntime.Python3})
	gate := filepath.Join(t.TempDir(), "gate")
	okCell(t, s, `import os, threading, time
def late():
    while not os.path.exists(`+jsonQuote(gate)+`):
        time.sleep(0.01)
    raise ValueError("late")
def starter():
    inner = threading.Thread(target=late, name="inner")
    inner.start()
    inner.join()
t = threading.Thread(target=starter)
t.start()
`)
	var seen []coderuntime.BackgroundError
	ex := cell(t, s, "open("+jsonQuote(gate)+", 'w').close()\nt.join()\nprint('own')\n'own result'\n",
		coderuntime.Callbacks{BackgroundError: func(e coderuntime.BackgroundError) { seen = append(seen, e) }})
	require.Nil(t, ex.Error, "a thread of an earlier cell does not fail this one")
	assert.Equal(t, "'own result'", mainResult(t, ex).MIME["text/plain"])
	assert.Equal(t, "own\n", ex.Stdout.Tail)
	assert.Empty(t, ex.Stderr.Tail, "the thread's traceback is not printed")
	require.Len(t, ex.BackgroundErrors, 1)
	be := ex.BackgroundErrors[0]
	assert.Equal(t, 1, be.Cell, "a thread started by a thread of cell 1 is cell 1's")
	assert.Equal(t, "ValueError", be.Name)
	assert.Equal(t, "late", be.Value)
	assert.True(t, strings.HasPrefix(be.Traceback, "Exception in thread inner:\nTraceback (most recent call last):\n"), be.Traceback)
	assert.Contains(t, be.Traceback, `File "<cell-1>", line 5, in late`)
	assert.Equal(t, ex.BackgroundErrors, seen)

	// A thread of the running cell: a background error too, since it does not end the cell.
	ex = okCell(t, s, "t2 = threading.Thread(target=lambda: 1 / 0)\nt2.start()\nt2.join()\n3\n")
	assert.Equal(t, "3", mainResult(t, ex).MIME["text/plain"])
	require.Len(t, ex.BackgroundErrors, 1)
	assert.Equal(t, 3, ex.BackgroundErrors[0].Cell)
	assert.Equal(t, "ZeroDivisionError", ex.BackgroundErrors[0].Name)

	// SystemExit ends a thread quietly, as in Python.
	ex = okCell(t, s, "import sys\nt3 = threading.Thread(target=sys.exit)\nt3.start()\nt3.join()\n")
	assert.Empty(t, ex.BackgroundErrors)
	assert.Empty(t, ex.Stderr.Tail)
}

func TestSessionOutputBetweenCells(t *testing.T) {
	rt := newRuntime(t, coderuntime.Config{})
	needs(t, rt, coderuntime.Python3)
	mark := marked(t)
	s := session(t, rt, mark, coderuntime.SessionConfig{Language: coderuntime.Python3})
	gate := filepath.Join(t.TempDir(), "gate")
	okCell(t, s, `import os, threading, time
def late():
    while not os.path.exists(`+jsonQuote(gate)+`):
        time.sleep(0.01)
    print("late")
    display("late result")
t = threading.Thread(target=late)
t.start()
`)
	require.NoError(t, os.WriteFile(gate, nil, 0o600))
	var seen strings.Builder
	ex := cell(t, s, "t.join()\nprint('now')\n", coderuntime.Callbacks{Stdout: func(text string) { seen.WriteString(text) }})
	require.Nil(t, ex.Error)
	assert.Equal(t, "late\nnow\n", ex.Stdout.Tail, "output written between cells belongs to the next one")
	assert.Equal(t, "late\nnow\n", seen.String())
	require.Len(t, ex.Results, 1)
	assert.Equal(t, "'late result'", ex.Results[0].MIME["text/plain"])
	assert.Equal(t, 1, ex.Results[0].FromCell, "a thread of cell 1 displayed it")
	ex = okCell(t, s, "th = threading.Thread(target=display, args=('own',))\nth.start()\nth.join()\n2\n")
	require.Len(t, ex.Results, 2)
	assert.Zero(t, ex.Results[0].FromCell, "a thread of the running cell displays its own results")
	assert.Zero(t, ex.Results[1].FromCell)
}

func TestSessionCallbackChunksWholeCharacters(t *testing.T) {
	rt := newRuntime(t, coderuntime.Config{})
	needs(t, rt, coderuntime.Python3)
	mark := marked(t)
	s := session(t, rt, mark, coderuntime.SessionConfig{Language: coderuntime.Python3})
	gate := filepath.Join(t.TempDir(), "gate")
	var mu sync.Mutex
	var chunks []string
	ex := cell(t, s, `import os, sys, time
sys.stdout.buffer.write(b"a\xe2\x82")
sys.stdout.flush()
while not os.path.exists(`+jsonQuote(gate)+`):
    time.sleep(0.01)
sys.stdout.buffer.write(b"\xac\n\xff")
`, coderuntime.Callbacks{Stdout: func(text string) {
		mu.Lock()
		defer mu.Unlock()
		chunks = append(chunks, text)
		if text == "a" {
			assert.NoError(t, os.WriteFile(gate, nil, 0o600)) // the split character was held back
		}
	}})
	require.Nil(t, ex.Error)
	assert.Equal(t, "a€\n\xff", ex.Stdout.Tail)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"a", "€\n\xff"}, chunks, "a character split across writes reaches the callback whole")
	for _, c := range chunks {
		assert.True(t, utf8.ValidString(strings.TrimSuffix(c, "\xff")))
	}
}

func TestSessionStdoutMovedByTheCode(t *testing.T) {
	rt := newRuntime(t, coderuntime.Config{})
	needs(t, rt, coderuntime.Python3)
	mark := marked(t)
	s := session(t, rt, mark, coderuntime.SessionConfig{Language: coderuntime.Python3})
	// The code points fd 1 elsewhere: the driver writes no end marker there, and says so, so
	// the cell ends without waiting for one.
	okCell(t, s, "import os\nsaved = os.dup(1)\nos.dup2(os.open(os.devnull, os.O_WRONLY), 1)\nprint('lost')\n")
	ex := okCell(t, s, "os.dup2(saved, 1)\nprint('back')\n")
	assert.Equal(t, "back\n", ex.Stdout.Tail)
	ex = okCell(t, s, "print('again')\n")
	assert.Equal(t, "again\n", ex.Stdout.Tail)
}

func TestSessionSharedService(t *testing.T) {
	mark := marked(t)
	tmp := t.TempDir()
	svc, err := subprocess.New(subprocess.Config{TempDir: tmp, SpillDir: t.TempDir()})
	require.NoError(t, err)
	defer func() { require.NoError(t, svc.Close()) }()

	_, err = coderuntime.New(coderuntime.Config{Service: svc, ServiceConfig: subprocess.Config{TempDir: tmp}})
	assert.ErrorIs(t, err, coderuntime.ErrInvalid, "a Service and a ServiceConfig")
	_, err = coderuntime.New(coderuntime.Config{Service: &subprocess.Service{}})
	assert.ErrorIs(t, err, coderuntime.ErrInvalid, "a Service not made by New")

	cfg := coderuntime.Config{Service: svc}
	if realPython() != "" {
		cfg.Interpreters = map[coderuntime.Language]string{coderuntime.Python3: realPython()}
	}
	rt, err := coderuntime.New(cfg)
	require.NoError(t, err)
	needs(t, rt, coderuntime.Python3)
	res := run(t, rt, mark, coderuntime.Request{Language: coderuntime.Python3, Code: "print('one-shot')\n"})
	assert.Equal(t, "one-shot\n", res.Stdout.Tail)
	s := session(t, rt, mark, coderuntime.SessionConfig{Language: coderuntime.Python3})
	okCell(t, s, "import subprocess\np = subprocess.Popen(['sleep', '1000'])\n")
	require.NoError(t, rt.Close())
	require.NoError(t, rt.Close(), "Close is safe twice")

	_, err = s.Run(ctxT(t, time.Minute), coderuntime.Cell{Code: "1"}, coderuntime.Callbacks{})
	assert.ErrorIs(t, err, coderuntime.ErrClosed, "the runtime's Close closed its session")
	assert.Empty(t, testutil.Marked(mark), "and ended what it started")
	ents, err := os.ReadDir(svc.RuntimeRoot())
	require.NoError(t, err, "the caller's Service is still open")
	assert.Empty(t, ents, "the runtime removed its directories from the shared runtime root")
	h, err := svc.Spawn(ctxT(t, time.Minute), subprocess.Spec{Path: "true"})
	require.NoError(t, err, "the caller's Service still spawns")
	_, err = h.Wait(ctxT(t, time.Minute))
	require.NoError(t, err)
	require.NoError(t, h.Close())
}

func TestSessionLongRuntimeRoot(t *testing.T) {
	long := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	require.NoError(t, os.MkdirAll(long, 0o700))
	rt := newRuntime(t, coderuntime.Config{ServiceConfig: subprocess.Config{TempDir: long}})
	needs(t, rt, coderuntime.Python3)
	mark := marked(t)
	s, err := rt.NewSession(ctxT(t, time.Minute), coderuntime.SessionConfig{Language: coderuntime.Python3, Env: markEnv(mark)})
	if runtime.GOOS != "linux" {
		require.ErrorContains(t, err, "shorter directory", "off Linux, a path too long for a socket says what to do")
		return
	}
	require.NoError(t, err, "a socket path longer than a socket address takes")
	defer s.Close()
	assert.Equal(t, "2", mainResult(t, okCell(t, s, "1 + 1\n")).MIME["text/plain"])
}

func TestSessionStartFailureSaysWhy(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "python3")
	require.NoError(t, os.WriteFile(fake, []byte("#!/bin/sh\necho 'no such driver here' >&2\nexit 9\n"), 0o700))
	rt := newRuntime(t, coderuntime.Config{Interpreters: map[coderuntime.Language]string{coderuntime.Python3: fake}})
	mark := marked(t)
	_, err := rt.NewSession(ctxT(t, time.Minute), coderuntime.SessionConfig{Language: coderuntime.Python3, Env: markEnv(mark)})
	require.Error(t, err)
	var e *coderuntime.Error
	require.ErrorAs(t, err, &e)
	assert.Contains(t, err.Error(), "exited with status 9")
	assert.Contains(t, err.Error(), "no such driver here", "what the interpreter printed")
}

func jsonQuote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

func TestSessionBadInput(t *testing.T) {
	rt := newRuntime(t, coderuntime.Config{})
	needs(t, rt, coderuntime.Python3)
	_, err := rt.NewSession(nil, coderuntime.SessionConfig{Language: coderuntime.Python3})
	assert.ErrorIs(t, err, coderuntime.ErrInvalid)
	_, err = rt.Run(nil, coderuntime.Request{Language: coderuntime.Python3, Code: "1"})
	assert.ErrorIs(t, err, coderuntime.ErrInvalid)
	assert.ErrorIs(t, rt.Shutdown(nil), coderuntime.ErrInvalid)
	_, err = rt.NewSession(context.Background(), coderuntime.SessionConfig{Language: coderuntime.Python3, StdoutBytes: 1 << 40})
	assert.ErrorIs(t, err, coderuntime.ErrInvalid, "a huge budget")
	_, err = rt.NewSession(context.Background(), coderuntime.SessionConfig{Language: coderuntime.Python3, Dir: "/no/such/dir"})
	assert.ErrorIs(t, err, coderuntime.ErrInvalid)

	// Huge durations are taken as they are, without overflow.
	mark := marked(t)
	s := session(t, rt, mark, coderuntime.SessionConfig{Language: coderuntime.Python3,
		Grace: math.MaxInt64, Timeout: math.MaxInt64, StartTimeout: math.MaxInt64})
	ex, err := s.Run(ctxT(t, time.Minute), coderuntime.Cell{Code: "2 * 21", Timeout: math.MaxInt64}, coderuntime.Callbacks{})
	require.NoError(t, err)
	assert.Equal(t, "42", mainResult(t, ex).MIME["text/plain"])
	require.NoError(t, s.Close())
}

func TestSessionTracebackNamesOnlyTheCell(t *testing.T) {
	tmp := t.TempDir()
	rt := newRuntime(t, coderuntime.Config{ServiceConfig: subprocess.Config{TempDir: tmp}})
	needs(t, rt, coderuntime.Python3)
	mark := marked(t)
	s := session(t, rt, mark, coderuntime.SessionConfig{Language: coderuntime.Python3})
	ex := cell(t, s, "print('before')\n1 / 0\n", coderuntime.Callbacks{})
	require.NotNil(t, ex.Error)
	assert.Equal(t, "ZeroDivisionError", ex.Error.Name)
	assert.Equal(t, "division by zero", ex.Error.Value)
	tb := ex.Error.Traceback
	assert.True(t, strings.HasPrefix(tb, "Traceback (most recent call last):\n  File \"<cell-1>\", line 2, in <module>\n    1 / 0\n"), tb)
	assert.True(t, strings.HasSuffix(tb, "ZeroDivisionError: division by zero\n"), tb)
	assert.Equal(t, 1, strings.Count(tb, "File "), "one frame: the cell's")
	assert.NotContains(t, tb, tmp)
	assert.Equal(t, "before\n", ex.Stdout.Tail)
	assert.Empty(t, ex.Stderr.Tail, "the error is the Execution's, not printed")

	// A module of the working directory: its frames name it relative to the working directory.
	okCell(t, s, "open('helper.py', 'w').write('def boom():\\n    raise KeyError(\"k\")\\n')\nimport importlib, sys\nimportlib.invalidate_caches()\n")
	ex = cell(t, s, "import helper\nhelper.boom()\n", coderuntime.Callbacks{})
	require.NotNil(t, ex.Error)
	assert.Contains(t, ex.Error.Traceback, "File \"helper.py\", line 2, in boom")
	assert.NotContains(t, ex.Error.Traceback, tmp)

	// So do warnings.
	ex = okCell(t, s, "import warnings\nwarnings.warn_explicit('careful', UserWarning, helper.__file__, 1)\n")
	assert.True(t, strings.HasPrefix(ex.Stderr.Tail, "helper.py:1: UserWarning: careful\n"), ex.Stderr.Tail)
}
