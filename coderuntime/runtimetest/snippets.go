package runtimetest

import "github.com/subkit/subkit/coderuntime"

// Environment variables the snippets read.
const (
	readyVar = "SUBKIT_RUNTIMETEST_READY" // a path the code creates once it runs
	idVar    = "SUBKIT_RUNTIMETEST_ID"    // a concurrent run's id
	plainVar = "SUBKIT_RUNTIMETEST_VAR"   // a plain variable given in Request.Env
)

// utf8Text is printed, with a newline, by the utf8 snippets; utf8Unit, 200 times without one,
// by the utf8Repeat snippets (1 + 3 + 4 bytes: every cut position is covered by budgets 5..12).
const (
	utf8Text   = "héllo wörld ✓ 日本語 🎉"
	utf8Unit   = "a€🎉"
	utf8Repeat = 200
)

// snippets are the programs the suite runs in one language. An empty field skips the cases
// that need it.
type snippets struct {
	outErr    string // prints "out" to stdout and "err" to stderr
	exit3     string // exits 3
	killSelf  string // kills itself with SIGKILL
	raise     string // prints its cwd to stderr and "before" to stdout, then f() raises "bad value"
	raiseName string // the exception class raise uses
	raiseIn   string // how the traceback names the frame of f
	handled   string // raises and catches an exception, prints "caught"
	syntax    string // prints "never" on line 1; a syntax error on line 2
	busy      string // prints its cwd, then spins forever
	sleep     string // prints its cwd, then sleeps forever
	ignore    string // ignores SIGTERM, prints "ignoring", then spins forever
	escape    string // starts a grandchild that escapes with setsid and keeps stdout, prints "started"
	escapeBin string // a program escape needs on PATH, or ""
	ready     string // prints its cwd, creates the file $SUBKIT_RUNTIMETEST_READY, sleeps forever
	big       string // writes 50 MiB of "x" and then "END\n" to stdout
	heavyErr  string // writes 8 MiB of "e" to stderr, then "done\n" to stdout
	utf8      string // prints utf8Text and a newline
	utf8Rep   string // writes utf8Unit utf8Repeat times
	stdin     string // prints "got <first line>" from stdin, or "eof"
	env       string // prints its environment, NAME=VALUE per line
	where     string // prints its cwd, its code file, their modes as 0o700 (or "-" lines)
	isolated  string // writes $SUBKIT_RUNTIMETEST_ID to own.txt, sleeps 0.3 s, prints cwd, id, own.txt, *.txt names
	ok        string // prints "ok"
}

func snippetsFor(l coderuntime.Language) (snippets, bool) {
	switch l {
	case coderuntime.Python3:
		return pythonSnippets(), true
	case coderuntime.Node:
		return nodeSnippets(), true
	case coderuntime.Bash:
		return bashSnippets(), true
	}
	return snippets{}, false
}

func pythonSnippets() snippets {
	return snippets{
		outErr:   "import sys\nprint(\"out\")\nprint(\"err\", file=sys.stderr)\n",
		exit3:    "import sys\nsys.exit(3)\n",
		killSelf: "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n",
		raise: `import os, sys
print(os.getcwd(), file=sys.stderr, flush=True)
print("before")


def f():
    raise ValueError("bad value")


f()
`,
		raiseName: "ValueError",
		raiseIn:   "in f",
		handled:   "try:\n    raise ValueError(\"x\")\nexcept ValueError:\n    print(\"caught\")\n",
		syntax:    "print(\"never\")\ndef f(:\n    pass\n",
		busy:      "import os\nprint(os.getcwd(), flush=True)\nwhile True:\n    pass\n",
		sleep:     "import os, time\nprint(os.getcwd(), flush=True)\ntime.sleep(1000)\n",
		ignore: `import signal
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("ignoring", flush=True)
while True:
    pass
`,
		escape: `import os, sys, time
sys.stdout.flush()
if os.fork() == 0:
    os.setsid()
    time.sleep(1000)
    os._exit(0)
print("started")
`,
		ready: `import os, time
print(os.getcwd(), flush=True)
open(os.environ["` + readyVar + `"], "w").close()
time.sleep(1000)
`,
		big: `import sys
chunk = b"x" * (1 << 20)
for _ in range(50):
    sys.stdout.buffer.write(chunk)
sys.stdout.buffer.write(b"END\n")
`,
		heavyErr: `import sys
chunk = "e" * (1 << 20)
for _ in range(8):
    sys.stderr.write(chunk)
sys.stderr.flush()
print("done")
`,
		utf8:    "print(\"" + utf8Text + "\")\n",
		utf8Rep: "import sys\nsys.stdout.write(\"" + utf8Unit + "\" * 200)\n",
		stdin: `try:
    line = input()
except EOFError:
    print("eof")
else:
    print("got " + line)
`,
		env: "import os\nfor k, v in os.environ.items():\n    print(k + \"=\" + v)\n",
		where: `import os
print(os.getcwd())
print(os.path.abspath(__file__))
print(oct(os.stat(".").st_mode & 0o777))
print(oct(os.stat(__file__).st_mode & 0o777))
`,
		isolated: `import os, time
me = os.environ["` + idVar + `"]
with open("own.txt", "w") as f:
    f.write(me)
time.sleep(0.3)
print(os.getcwd())
print(me)
print(open("own.txt").read())
print(",".join(sorted(n for n in os.listdir(".") if n.endswith(".txt"))))
`,
		ok: "print(\"ok\")\n",
	}
}

func nodeSnippets() snippets {
	return snippets{
		outErr:   "console.log(\"out\");\nconsole.error(\"err\");\n",
		exit3:    "process.exit(3);\n",
		killSelf: "process.kill(process.pid, \"SIGKILL\");\n",
		raise: `console.error(process.cwd());
console.log("before");
function f() {
  throw new TypeError("bad value");
}
f();
`,
		raiseName: "TypeError",
		raiseIn:   "at f ",
		handled:   "try {\n  throw new Error(\"x\");\n} catch (e) {\n  console.log(\"caught\");\n}\n",
		syntax:    "console.log(\"never\");\nlet x = ;\n",
		busy:      "console.log(process.cwd());\nfor (;;) {}\n",
		sleep:     "console.log(process.cwd());\nsetTimeout(() => {}, 1e9);\n",
		ignore:    "process.on(\"SIGTERM\", () => {});\nconsole.log(\"ignoring\");\nfor (;;) {}\n",
		escape: `const cp = require("child_process");
cp.spawn("sleep", ["1000"], { detached: true, stdio: "inherit" }).unref();
console.log("started");
`,
		escapeBin: "sleep",
		ready: `const fs = require("fs");
console.log(process.cwd());
fs.writeFileSync(process.env.` + readyVar + `, "");
setTimeout(() => {}, 1e9);
`,
		big: `const chunk = Buffer.alloc(1 << 20, "x");
for (let i = 0; i < 50; i++) process.stdout.write(chunk);
process.stdout.write("END\n");
`,
		heavyErr: `const chunk = "e".repeat(1 << 20);
for (let i = 0; i < 8; i++) process.stderr.write(chunk);
console.log("done");
`,
		utf8:    "console.log(\"" + utf8Text + "\");\n",
		utf8Rep: "process.stdout.write(\"" + utf8Unit + "\".repeat(200));\n",
		stdin: `let data = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (c) => { data += c; });
process.stdin.on("end", () => {
  console.log(data === "" ? "eof" : "got " + data.split("\n")[0]);
});
`,
		env: "for (const [k, v] of Object.entries(process.env)) console.log(k + \"=\" + v);\n",
		where: `const fs = require("fs");
console.log(process.cwd());
console.log(__filename);
console.log("0o" + (fs.statSync(".").mode & 0o777).toString(8));
console.log("0o" + (fs.statSync(__filename).mode & 0o777).toString(8));
`,
		isolated: `const fs = require("fs");
const me = process.env.` + idVar + `;
fs.writeFileSync("own.txt", me);
setTimeout(() => {
  console.log(process.cwd());
  console.log(me);
  console.log(fs.readFileSync("own.txt", "utf8"));
  console.log(fs.readdirSync(".").filter((n) => n.endsWith(".txt")).sort().join(","));
}, 300);
`,
		ok: "console.log(\"ok\");\n",
	}
}

func bashSnippets() snippets {
	return snippets{
		outErr:    "echo out\necho err >&2\n",
		exit3:     "exit 3\n",
		killSelf:  "kill -KILL $$\n",
		busy:      "pwd\nwhile :; do :; done\n",
		sleep:     "pwd\nsleep 1000\n",
		ignore:    "trap '' TERM\necho ignoring\nwhile :; do :; done\n",
		escape:    "setsid sleep 1000 &\necho started\n",
		escapeBin: "setsid",
		ready:     "pwd\n: > \"$" + readyVar + "\"\nsleep 1000\n",
		big:       "head -c 52428800 /dev/zero | tr '\\0' x\necho END\n",
		heavyErr:  "head -c 8388608 /dev/zero | tr '\\0' e >&2\necho done\n",
		utf8:      "echo \"" + utf8Text + "\"\n",
		utf8Rep:   "for ((i = 0; i < 200; i++)); do printf '%s' '" + utf8Unit + "'; done\n",
		stdin:     "if IFS= read -r line; then echo \"got $line\"; else echo eof; fi\n",
		env:       "env\n",
		where: `pwd -P
echo "$0"
stat -c '0o%a' . "$0" 2>/dev/null || stat -f '0o%Lp' . "$0"
`,
		isolated: `echo "$` + idVar + `" > own.txt
sleep 0.3
pwd -P
echo "$` + idVar + `"
cat own.txt
ls *.txt | paste -sd, -
`,
		ok: "echo ok\n",
	}
}
