package runtimetest

import (
	"encoding/json"
	"fmt"

	"github.com/subkit/subkit/coderuntime"
)

// sessionSnippets are the cells the session suite runs in one language. An empty field skips
// the cases that need it. Fields ending in F are format strings taking one quoted path (a JSON
// string, which is a string literal in both languages).
type sessionSnippets struct {
	assign41   string // x = 41, no value
	plus1      string // x + 1 as a trailing expression
	getX       string // x as a trailing expression
	statement  string // a statement without a value
	outErr     string // prints "out" to stdout and "err" to stderr
	other      string // prints "other" to stdout
	raise      string // f() raises "bad value"
	raiseName  string // the exception class raise uses
	raiseIn    string // how the traceback names the frame of f
	undefined  string // the error name when x is not defined
	syntax     string // prints "never" on line 1; a syntax error on line 2
	firstWaitF string // prints "first", waits until the file exists, prints "second"
	display    string // display()s a text/html bundle "<b>hi</b>", then 5 as a trailing expression
	busy       string // spins forever in the interpreter
	readyF     string // creates the file, then sleeps forever (interruptible)
	blockF     string // starts `sleep 1000` (marked through the environment), creates the file, ignores SIGINT, blocks in native code
	big        string // writes 100 MB of "x" and then "END\n", then "done" as a trailing expression
	chdirF     string // changes the working directory
	printCwd   string // prints the working directory
	exit3      string // ends the interpreter with status 3
	awaitSet   string // top-level await, then q = 3
	q2         string // q * 2 as a trailing expression
	rejected   string // a promise rejected with Error("no") that nothing handles
	env        string // prints the environment, NAME=VALUE per line
	incr       string // n = n + 1 (n starts at 0), n as the trailing expression
	lateF      string // leaves code running that raises Error/ValueError "late" once the file exists
	lateWaitF  string // creates the file, waits until lateF's code has raised, then 7 as a trailing expression
}

func quote(s string) string {
	b, _ := json.Marshal(s) // a string always marshals
	return string(b)
}

func (s sessionSnippets) firstWait(path string) string { return fmt.Sprintf(s.firstWaitF, quote(path)) }
func (s sessionSnippets) ready(path string) string     { return fmt.Sprintf(s.readyF, quote(path)) }
func (s sessionSnippets) block(path string) string     { return fmt.Sprintf(s.blockF, quote(path)) }
func (s sessionSnippets) chdir(path string) string     { return fmt.Sprintf(s.chdirF, quote(path)) }
func (s sessionSnippets) late(path string) string      { return fmt.Sprintf(s.lateF, quote(path)) }
func (s sessionSnippets) lateWait(path string) string  { return fmt.Sprintf(s.lateWaitF, quote(path)) }

func sessionSnippetsFor(l coderuntime.Language) (sessionSnippets, bool) {
	switch l {
	case coderuntime.Python3:
		return pythonSessionSnippets(), true
	case coderuntime.Node:
		return nodeSessionSnippets(), true
	}
	return sessionSnippets{}, false
}

func pythonSessionSnippets() sessionSnippets {
	return sessionSnippets{
		assign41:  "x = 41\n",
		plus1:     "x + 1\n",
		getX:      "x\n",
		statement: "y = [1, 2]\n",
		outErr:    "import sys\nprint('out')\nprint('err', file=sys.stderr)\n",
		other:     "print('other')\n",
		raise: `def f():
    raise ValueError("bad value")


f()
`,
		raiseName:  "ValueError",
		raiseIn:    "in f",
		undefined:  "NameError",
		syntax:     "print('never')\ndef f(:\n    pass\n",
		firstWaitF: "import os, time\nprint('first')\nwhile not os.path.exists(%s):\n    time.sleep(0.01)\nprint('second')\n",
		display:    "display({'text/html': '<b>hi</b>'}, raw=True)\n5\n",
		busy:       "while True:\n    pass\n",
		readyF:     "import time\nopen(%s, 'w').close()\ntime.sleep(1000)\n",
		blockF: `import os, signal, subprocess
subprocess.Popen(["sleep", "1000"])
signal.signal(signal.SIGINT, signal.SIG_IGN)
r, w = os.pipe()
open(%s, "w").close()
os.read(r, 1)
`,
		big: `import sys
chunk = "x" * 1000000
for _ in range(100):
    sys.stdout.write(chunk)
sys.stdout.write("END\n")
"done"
`,
		chdirF:   "import os\nos.chdir(%s)\n",
		printCwd: "import os\nprint(os.getcwd())\n",
		exit3:    "import os\nos._exit(3)\n",
		awaitSet: "import asyncio\nawait asyncio.sleep(0)\nq = 3\n",
		q2:       "q * 2\n",
		env:      "import os\nfor k, v in os.environ.items():\n    print(k + '=' + v)\n",
		incr:     "n = globals().get('n', 0) + 1\nn\n",
		lateF: `import os, threading, time
def late():
    while not os.path.exists(%s):
        time.sleep(0.01)
    raise ValueError("late")
late_thread = threading.Thread(target=late)
late_thread.start()
`,
		lateWaitF: "open(%s, 'w').close()\nlate_thread.join()\n7\n",
	}
}

func nodeSessionSnippets() sessionSnippets {
	return sessionSnippets{
		assign41:  "let x = 41;\n",
		plus1:     "x + 1\n",
		getX:      "x\n",
		statement: "const y = [1, 2];\n",
		outErr:    "console.log('out');\nconsole.error('err');\n",
		other:     "console.log('other');\n",
		raise: `function f() {
  throw new TypeError("bad value");
}
f();
`,
		raiseName:  "TypeError",
		raiseIn:    "at f ",
		undefined:  "ReferenceError",
		syntax:     "console.log('never');\nlet = ;\n",
		firstWaitF: "console.log('first');\nawait new Promise((resolve) => { const t = setInterval(() => { if (require('fs').existsSync(%s)) { clearInterval(t); resolve(); } }, 10); });\nconsole.log('second');\n",
		display:    "display({'text/html': '<b>hi</b>'}, {raw: true});\n5\n",
		busy:       "for (;;) {}\n",
		readyF:     "require('fs').writeFileSync(%s, '');\nawait new Promise(() => {});\n",
		blockF: `const cp = require('child_process');
cp.spawn('sleep', ['1000'], { stdio: 'ignore' });
require('fs').writeFileSync(%s, '');
cp.execFileSync('bash', ['-c', "trap '' INT; sleep 1000"], { stdio: 'ignore' });
`,
		big: `const chunk = 'x'.repeat(1000000);
for (let i = 0; i < 100; i++) process.stdout.write(chunk);
process.stdout.write('END\n');
'done'
`,
		chdirF:   "process.chdir(%s);\n",
		printCwd: "console.log(process.cwd());\n",
		exit3:    "process.exit(3);\n",
		awaitSet: "let q = await Promise.resolve(3);\n",
		q2:       "q * 2\n",
		rejected: "Promise.reject(new Error('no'));\n",
		env:      "for (const [k, v] of Object.entries(process.env)) console.log(k + '=' + v);\n",
		incr:     "var n = (typeof n === 'undefined' ? 0 : n) + 1;\nn\n",
		lateF:    "const lateTimer = setInterval(() => { if (require('fs').existsSync(%s)) { clearInterval(lateTimer); throw new Error('late'); } }, 5);\n",
		lateWaitF: "require('fs').writeFileSync(%s, '');\n" +
			"await new Promise((resolve) => process.once('uncaughtExceptionMonitor', () => setImmediate(resolve)));\n7\n",
	}
}
