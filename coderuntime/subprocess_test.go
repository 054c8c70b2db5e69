//go:build unix

package coderuntime_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/coderuntime"
	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/subprocess"
)

// run runs req marked with mark and requires no Go error.
func run(t *testing.T, rt *coderuntime.Runtime, mark string, req coderuntime.Request) coderuntime.Result {
	t.Helper()
	req.Env = append(req.Env, markEnv(mark)...)
	res, err := rt.Run(ctxT(t, time.Minute), req)
	require.NoError(t, err)
	return res
}

// runtimeRoot is the one runtime root inside tmp.
func runtimeRoot(t *testing.T, tmp string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(tmp, "subkit-runtime-*"))
	require.NoError(t, err)
	require.Len(t, m, 1)
	return m[0]
}

func TestRunDirectoryLayout(t *testing.T) {
	tmp := t.TempDir()
	rt := newRuntime(t, coderuntime.Config{ServiceConfig: subprocess.Config{TempDir: tmp}})
	needs(t, rt, coderuntime.Python3)
	mark := marked(t)
	root := runtimeRoot(t, tmp)
	res := run(t, rt, mark, coderuntime.Request{Language: coderuntime.Python3, Code: `import os, stat
print(sorted(os.listdir(".")))
print(sorted(os.listdir("..")))
print(oct(stat.S_IMODE(os.stat("..").st_mode)), oct(stat.S_IMODE(os.stat("../prelude.py").st_mode)))
print(os.path.dirname(os.path.dirname(os.getcwd())))
`})
	assert.Equal(t, "['main.py']\n['prelude.py', 'work']\n0o700 0o600\n"+root+"\n", res.Stdout.Tail,
		"the code sees only its file (the error report's name is gone); the prelude sits outside its working directory; stderr: %s", res.Stderr.Tail)
	ents, err := os.ReadDir(root)
	require.NoError(t, err)
	assert.Empty(t, ents, "the run's directory is removed")
}

func TestPythonTraceback(t *testing.T) {
	tmp := t.TempDir()
	rt := newRuntime(t, coderuntime.Config{ServiceConfig: subprocess.Config{TempDir: tmp}})
	needs(t, rt, coderuntime.Python3)
	mark := marked(t)
	res := run(t, rt, mark, coderuntime.Request{Language: coderuntime.Python3, Code: `def f():
    try:
        {}["k"]
    except KeyError as e:
        raise ValueError("bad value") from e


f()
`})
	require.NotNil(t, res.Error)
	tb := res.Error.Traceback
	assert.Equal(t, "ValueError", res.Error.Name)
	assert.True(t, strings.HasPrefix(tb, "Traceback (most recent call last):\n  File \"main.py\", line 3, in f\n"), tb)
	assert.Contains(t, tb, "KeyError: 'k'", "the chained exception is kept")
	assert.Contains(t, tb, "The above exception was the direct cause")
	assert.True(t, strings.HasSuffix(tb, "ValueError: bad value\n"), tb)
	assert.NotContains(t, tb, "prelude", "the prelude's frames are cut")
	assert.NotContains(t, tb, "_subkit")
	assert.Equal(t, 1, res.ExitCode)
	assert.Contains(t, res.Stderr.Tail, "ValueError: bad value", "the traceback is printed to stderr as Python does")
	assert.Contains(t, res.Stderr.Tail, `File "main.py", line 3, in f`, "with the same relative paths")

	res = run(t, rt, mark, coderuntime.Request{Language: coderuntime.Python3, Code: "x = (\n"})
	require.NotNil(t, res.Error)
	assert.Equal(t, "SyntaxError", res.Error.Name)
	assert.Contains(t, res.Error.Value, "main.py", "paths are relative to the working directory")
	assert.NotContains(t, res.Error.Value+res.Error.Traceback, runtimeRoot(t, tmp))
}

func TestPythonMainModuleAndExit(t *testing.T) {
	rt := newRuntime(t, coderuntime.Config{})
	needs(t, rt, coderuntime.Python3)
	mark := marked(t)
	res := run(t, rt, mark, coderuntime.Request{Language: coderuntime.Python3, Code: `import os, pickle, sys


class A:
    pass


pickle.loads(pickle.dumps(A()))
print(__name__, os.path.basename(sys.argv[0]), os.path.basename(__file__), sys.path[0] == os.getcwd())
print("_SUBKIT_CODE" in globals(), "_subkit_main" in globals())
sys.exit("bye")
`})
	assert.Equal(t, "__main__ main.py main.py True\nFalse False\n", res.Stdout.Tail, res.Stderr.Tail)
	assert.Equal(t, "bye\n", res.Stderr.Tail, "SystemExit goes through as Python handles it")
	assert.Equal(t, 1, res.ExitCode)
	assert.Nil(t, res.Error, "SystemExit is not a code error")
}

func TestPythonOutputKeptOnTimeout(t *testing.T) {
	rt := newRuntime(t, coderuntime.Config{})
	needs(t, rt, coderuntime.Python3)
	mark := marked(t)
	res := run(t, rt, mark, coderuntime.Request{
		Language: coderuntime.Python3, Code: "print('partial')\nwhile True:\n    pass\n",
		Timeout: time.Second, Grace: 300 * time.Millisecond,
	})
	assert.True(t, res.TimedOut)
	assert.Equal(t, "partial\n", res.Stdout.Tail, "the prelude flushes on SIGTERM")
	assert.Equal(t, "SIGTERM", res.Signal)
}

func TestNodeErrors(t *testing.T) {
	rt := newRuntime(t, coderuntime.Config{})
	needs(t, rt, coderuntime.Node)
	mark := marked(t)
	node := func(code string) coderuntime.Result {
		return run(t, rt, mark, coderuntime.Request{Language: coderuntime.Node, Code: code})
	}

	res := node("function f() {\n  throw new RangeError('too far');\n}\nf();\n")
	require.NotNil(t, res.Error)
	assert.Equal(t, "RangeError", res.Error.Name)
	assert.Equal(t, "too far", res.Error.Value)
	assert.True(t, strings.HasPrefix(res.Error.Traceback, "RangeError: too far\n    at f (main.js:2:9)\n"), res.Error.Traceback)
	assert.NotContains(t, res.Error.Traceback, "node:internal", "node's internal frames are cut")
	assert.NotContains(t, res.Error.Traceback, "prelude")

	res = node("Promise.reject(new Error('rejected'));\n")
	require.NotNil(t, res.Error, "an unhandled rejection ends node like an uncaught exception")
	assert.Equal(t, "Error", res.Error.Name)
	assert.Equal(t, "rejected", res.Error.Value)

	res = node("throw 'just a string';\n")
	require.NotNil(t, res.Error)
	assert.Equal(t, "string", res.Error.Name)
	assert.Equal(t, "'just a string'", res.Error.Value)

	res = node("process.on('uncaughtException', (e) => console.log('handled ' + e.message));\nthrow new Error('x');\n")
	assert.Nil(t, res.Error, "an exception the code handles itself is not reported")
	assert.Equal(t, "handled x\n", res.Stdout.Tail)
	assert.Equal(t, 0, res.ExitCode)

	res = node("console.log(require.main === module, require('path').basename(__filename), process.argv.length);\n")
	assert.Equal(t, "true main.js 2\n", res.Stdout.Tail, "the code is node's ordinary main module")
}

// findReport is python code that sets report to the path the prelude was given for its error
// report (a global of the prelude's module, up the stack), as code that means harm would.
const findReport = `import os, sys
f = sys._getframe()
while f is not None and "_SUBKIT_ERROR" not in f.f_globals:
    f = f.f_back
report = f.f_globals["_SUBKIT_ERROR"]
`

// TestForgedErrorReportIgnored: a report the code writes at the path the prelude was given is
// not the one the host reads back, whether the code ends normally or raises.
func TestForgedErrorReportIgnored(t *testing.T) {
	rt := newRuntime(t, coderuntime.Config{})
	needs(t, rt, coderuntime.Python3)
	mark := marked(t)
	forge := findReport + `open(report, "w").write('{"name": "Forged", "value": "", "traceback": ""}')
print("forged", os.path.exists(report))
`
	res := run(t, rt, mark, coderuntime.Request{Language: coderuntime.Python3, Code: forge})
	assert.Nil(t, res.Error)
	assert.Equal(t, "forged True\n", res.Stdout.Tail)

	res = run(t, rt, mark, coderuntime.Request{Language: coderuntime.Python3, Code: forge + "raise KeyError('real')\n"})
	require.NotNil(t, res.Error)
	assert.Equal(t, "KeyError", res.Error.Name, "the prelude's report, not the forged one")
}

func TestInvalidUTF8KeptAsIs(t *testing.T) {
	rt := newRuntime(t, coderuntime.Config{})
	needs(t, rt, coderuntime.Bash)
	mark := marked(t)
	res := run(t, rt, mark, coderuntime.Request{Language: coderuntime.Bash, Code: `printf 'ok\xff\xfe\n'`})
	assert.Equal(t, "ok\xff\xfe\n", res.Stdout.Tail)

	// A truncated tail drops only the rest of a cut character.
	res = run(t, rt, mark, coderuntime.Request{Language: coderuntime.Bash, Code: `printf 'ab€\xffcd'`, StdoutBytes: 5})
	assert.Equal(t, "\xffcd", res.Stdout.Tail)
	assert.True(t, res.Stdout.Truncated)
}

func TestInterpreterOverrides(t *testing.T) {
	dir := t.TempDir()
	noexec := filepath.Join(dir, "bash")
	require.NoError(t, os.WriteFile(noexec, []byte("#!/bin/sh\n"), 0o600))
	rt := newRuntime(t, coderuntime.Config{Interpreters: map[coderuntime.Language]string{
		coderuntime.Bash: "subkit-no-such-bash",
		coderuntime.Node: noexec,
	}})
	mark := marked(t)
	langs := rt.Languages()
	assert.NotContains(t, langs, coderuntime.Bash)
	assert.NotContains(t, langs, coderuntime.Node)

	_, err := rt.Run(ctxT(t, time.Minute), coderuntime.Request{Language: coderuntime.Bash, Code: "echo hi"})
	require.ErrorIs(t, err, coderuntime.ErrRuntimeUnavailable)
	var ue *coderuntime.UnavailableError
	require.True(t, errors.As(err, &ue))
	assert.Equal(t, "subkit-no-such-bash", ue.Interpreter)
	assert.NotEmpty(t, ue.Searched, "the PATH directories searched")
	assert.ErrorIs(t, err, subprocess.ErrNotFound)
	for _, d := range ue.Searched {
		assert.True(t, filepath.IsAbs(d))
		assert.Contains(t, err.Error(), d)
	}

	_, err = rt.Run(ctxT(t, time.Minute), coderuntime.Request{Language: coderuntime.Node, Code: "1"})
	require.ErrorIs(t, err, coderuntime.ErrRuntimeUnavailable)
	assert.ErrorIs(t, err, subprocess.ErrPermission)
	assert.Contains(t, err.Error(), "cannot be executed")
	assert.Contains(t, err.Error(), noexec)

	// A Request's Interpreter beats the Config's.
	if bash, err := exec.LookPath("bash"); err == nil {
		res := run(t, rt, mark, coderuntime.Request{Language: coderuntime.Bash, Code: "echo hi", Interpreter: bash})
		assert.Equal(t, "hi\n", res.Stdout.Tail)
	}
}

func TestConfigAndRequestErrors(t *testing.T) {
	for _, cfg := range []coderuntime.Config{
		{Timeout: -1},
		{Grace: -1},
		{StdoutBytes: -1},
		{SpillBytes: -1},
	} {
		_, err := coderuntime.New(cfg)
		assert.ErrorIs(t, err, coderuntime.ErrInvalid, "%+v", cfg)
	}
	_, err := coderuntime.New(coderuntime.Config{Languages: []coderuntime.Language{"ruby"}})
	assert.ErrorIs(t, err, coderuntime.ErrUnsupportedLanguage)
	_, err = coderuntime.New(coderuntime.Config{Interpreters: map[coderuntime.Language]string{"ruby": "ruby"}})
	assert.ErrorIs(t, err, coderuntime.ErrUnsupportedLanguage)

	rt := newRuntime(t, coderuntime.Config{Languages: []coderuntime.Language{coderuntime.Bash}})
	_, err = rt.Run(ctxT(t, time.Minute), coderuntime.Request{Language: coderuntime.Python3, Code: "1"})
	assert.ErrorIs(t, err, coderuntime.ErrUnsupportedLanguage, "a language the Config leaves out")
	var re *coderuntime.RequestError
	require.True(t, errors.As(err, &re))
	assert.Equal(t, "Language", re.Field)

	_, err = rt.Run(ctxT(t, time.Minute), coderuntime.Request{Language: coderuntime.Bash, Dir: "/no/such/dir"})
	assert.ErrorIs(t, err, coderuntime.ErrInvalid)
	assert.True(t, errors.As(err, &re))
	assert.Equal(t, "Dir", re.Field)
}

func TestDirOverride(t *testing.T) {
	rt := newRuntime(t, coderuntime.Config{})
	needs(t, rt, coderuntime.Bash)
	mark := marked(t)
	dir := t.TempDir()
	res := run(t, rt, mark, coderuntime.Request{Language: coderuntime.Bash, Code: "pwd -P; echo kept > out.txt", Dir: dir})
	real, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	assert.Equal(t, real+"\n", res.Stdout.Tail)
	data, err := os.ReadFile(filepath.Join(dir, "out.txt"))
	require.NoError(t, err)
	assert.Equal(t, "kept\n", string(data), "a caller's directory is not removed")
}

func TestSpill(t *testing.T) {
	spill := t.TempDir()
	rt := newRuntime(t, coderuntime.Config{ServiceConfig: subprocess.Config{SpillDir: spill}, SpillBytes: 1 << 20})
	needs(t, rt, coderuntime.Bash)
	mark := marked(t)
	res := run(t, rt, mark, coderuntime.Request{Language: coderuntime.Bash, Code: "seq 1 10000", StdoutBytes: 10})
	assert.True(t, res.Stdout.Truncated)
	assert.Equal(t, "999\n10000\n", res.Stdout.Tail)
	require.NotEmpty(t, res.Stdout.SpillPath)
	data, err := os.ReadFile(res.Stdout.SpillPath)
	require.NoError(t, err)
	assert.EqualValues(t, res.Stdout.TotalBytes, len(data))
	assert.True(t, strings.HasPrefix(string(data), "1\n2\n3\n"))
	assert.True(t, strings.HasPrefix(res.Stdout.SpillPath, spill))
}

func TestLeftBehindProcessesEnded(t *testing.T) {
	rt := newRuntime(t, coderuntime.Config{})
	needs(t, rt, coderuntime.Bash)
	mark := marked(t)
	// Background jobs in the group and a daemon that redirected its output and left with
	// setsid: neither holds the pipes, so only the post-run sweep can find them.
	begin := time.Now()
	res := run(t, rt, mark, coderuntime.Request{Language: coderuntime.Bash, Grace: 300 * time.Millisecond,
		Code: "sleep 1000 & (setsid sleep 1001 >/dev/null 2>&1 &); echo done"})
	assert.Equal(t, "done\n", res.Stdout.Tail)
	assert.Less(t, time.Since(begin), 5*time.Second)
	assert.Empty(t, testutil.Marked(mark), "Run ended what the code left behind")
}

func TestCloseDuringRun(t *testing.T) {
	rt := newRuntime(t, coderuntime.Config{})
	needs(t, rt, coderuntime.Bash)
	mark := marked(t)
	ready := filepath.Join(t.TempDir(), "ready")
	type outcome struct {
		res coderuntime.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := rt.Run(context.Background(), coderuntime.Request{Language: coderuntime.Bash,
			Code: "echo started; : > \"$READY\"; sleep 1000", Grace: 300 * time.Millisecond,
			Env: append(markEnv(mark), "READY="+ready)})
		done <- outcome{res, err}
	}()
	for {
		if _, err := os.Stat(ready); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, rt.Close())
	o := <-done // Close waits for the run to return
	assert.ErrorIs(t, o.err, coderuntime.ErrClosed)
	assert.ErrorIs(t, o.err, subprocess.ErrClosed, "one test covers every closed adapter")
	assert.Equal(t, "started\n", o.res.Stdout.Tail, "what the run did comes with the error")
	assert.Empty(t, testutil.Marked(mark))
	require.NoError(t, rt.Close(), "Close is safe twice")
	_, err := rt.Run(context.Background(), coderuntime.Request{Language: coderuntime.Bash, Code: "echo"})
	assert.ErrorIs(t, err, coderuntime.ErrClosed)
	assert.ErrorIs(t, err, subprocess.ErrClosed)
	_, err = rt.NewSession(context.Background(), coderuntime.SessionConfig{Language: coderuntime.Python3})
	assert.ErrorIs(t, err, subprocess.ErrClosed)
}

// A runtime on a caller's Service that the caller closed: Run and NewSession fail with
// ErrClosed (subprocess.ErrClosed too) before making anything under the gone runtime root,
// not with the file system's complaint about it.
func TestClosedServiceIsErrClosed(t *testing.T) {
	tmp := t.TempDir()
	svc, err := subprocess.New(subprocess.Config{TempDir: tmp})
	require.NoError(t, err)
	rt, err := coderuntime.New(coderuntime.Config{Service: svc})
	require.NoError(t, err)
	t.Cleanup(func() { rt.Close() })
	needs(t, rt, coderuntime.Bash)
	require.NoError(t, svc.Close())

	_, err = rt.Run(ctxT(t, time.Minute), coderuntime.Request{Language: coderuntime.Bash, Code: "echo"})
	assert.ErrorIs(t, err, coderuntime.ErrClosed)
	assert.ErrorIs(t, err, subprocess.ErrClosed)
	assert.NotContains(t, err.Error(), "no such file")
	var ce *coderuntime.Error
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "run", ce.Op)
	if len(rt.SessionLanguages()) > 0 {
		_, err = rt.NewSession(ctxT(t, time.Minute), coderuntime.SessionConfig{Language: rt.SessionLanguages()[0]})
		assert.ErrorIs(t, err, coderuntime.ErrClosed)
		assert.ErrorIs(t, err, subprocess.ErrClosed)
		assert.NotContains(t, err.Error(), "no such file")
	}
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing made where the runtime root was")
	require.NoError(t, rt.Close())
}

func TestPythonEnvDefaults(t *testing.T) {
	rt := newRuntime(t, coderuntime.Config{})
	needs(t, rt, coderuntime.Python3)
	mark := marked(t)
	res := run(t, rt, mark, coderuntime.Request{Language: coderuntime.Python3,
		Code: "import sys\nprint(sys.flags.utf8_mode, sys.stdout.encoding)\n",
		Env:  []string{"LC_ALL=C", "LANG=C"}})
	assert.Equal(t, "1 utf-8\n", res.Stdout.Tail)
	res = run(t, rt, mark, coderuntime.Request{Language: coderuntime.Python3,
		Code: "import sys\nprint(sys.flags.utf8_mode)\n", Env: []string{"PYTHONUTF8=0"}})
	assert.Equal(t, "0\n", res.Stdout.Tail, "the Request's Env wins")
}

func TestSecretsScrubbedFromConfigEnv(t *testing.T) {
	mark := marked(t)
	rt := newRuntime(t, coderuntime.Config{ServiceConfig: subprocess.Config{
		Env: append(markEnv(mark), "PATH="+os.Getenv("PATH"), "SUBKIT_TEST_SECRET_TOKEN=hunter2",
			"AWS_SECRET_ACCESS_KEY=k", "GITHUB_TOKEN=t", "DB_PASSWORD=p", "DSH_SESSION=s", "KEYBOARD_LAYOUT=us", "PLAIN=ok"),
		AllowEnv: []string{"KEYBOARD_LAYOUT"},
	}})
	needs(t, rt, coderuntime.Bash)
	res, err := rt.Run(ctxT(t, time.Minute), coderuntime.Request{Language: coderuntime.Bash, Code: "env | sort",
		Env: []string{"GIVEN_TOKEN=explicit"}})
	require.NoError(t, err)
	for _, gone := range []string{"hunter2", "SUBKIT_TEST_SECRET_TOKEN", "AWS_SECRET", "GITHUB_TOKEN", "DB_PASSWORD", "DSH_SESSION"} {
		assert.NotContains(t, res.Stdout.Tail, gone)
	}
	for _, kept := range []string{"PLAIN=ok\n", "KEYBOARD_LAYOUT=us\n", "GIVEN_TOKEN=explicit\n"} {
		assert.Contains(t, res.Stdout.Tail, kept, "allowed, plain and explicitly given variables reach the code")
	}
}

func TestPythonWarningsRelative(t *testing.T) {
	tmp := t.TempDir()
	rt := newRuntime(t, coderuntime.Config{ServiceConfig: subprocess.Config{TempDir: tmp}})
	needs(t, rt, coderuntime.Python3)
	mark := marked(t)
	res := run(t, rt, mark, coderuntime.Request{Language: coderuntime.Python3,
		Code: "import warnings\nwarnings.warn('careful')\nprint('after')\n"})
	assert.Equal(t, "after\n", res.Stdout.Tail)
	assert.True(t, strings.HasPrefix(res.Stderr.Tail, "main.py:2: UserWarning: careful\n"), res.Stderr.Tail)
	assert.NotContains(t, res.Stderr.Tail, runtimeRoot(t, tmp), "no private path in a warning")
}

func TestNodeStackRelative(t *testing.T) {
	tmp := t.TempDir()
	rt := newRuntime(t, coderuntime.Config{ServiceConfig: subprocess.Config{TempDir: tmp}})
	needs(t, rt, coderuntime.Node)
	mark := marked(t)
	res := run(t, rt, mark, coderuntime.Request{Language: coderuntime.Node,
		Code: "console.log('before');\nfunction f() {\n  throw new RangeError('too far');\n}\nf();\n"})
	assert.Equal(t, 1, res.ExitCode, "node's status for an uncaught exception")
	assert.Equal(t, "before\n", res.Stdout.Tail)
	root := runtimeRoot(t, tmp)
	errOut := res.Stderr.Tail
	assert.NotContains(t, errOut, root, "no private path in what node prints")
	assert.True(t, strings.HasPrefix(errOut, "main.js:3\n  throw new RangeError('too far');\n"), errOut)
	assert.Contains(t, errOut, "\nRangeError: too far\n    at f (main.js:3:9)\n")
	assert.Contains(t, errOut, "Node.js v")
	require.NotNil(t, res.Error)
	assert.Equal(t, "too far", res.Error.Value)

	res = run(t, rt, mark, coderuntime.Request{Language: coderuntime.Node, Code: "let x = ;\n"})
	assert.Equal(t, 1, res.ExitCode)
	assert.True(t, strings.HasPrefix(res.Stderr.Tail, "main.js:1\nlet x = ;\n"), res.Stderr.Tail)
	assert.NotContains(t, res.Stderr.Tail, root)
	require.NotNil(t, res.Error)
	assert.Equal(t, "SyntaxError", res.Error.Name)

	res = run(t, rt, mark, coderuntime.Request{Language: coderuntime.Node, Code: "require('domain');\nthrow new Error('with domain loaded');\n"})
	assert.Equal(t, 1, res.ExitCode, "node's domain module listens for uncaught exceptions but handles none")
	require.NotNil(t, res.Error)
	assert.Equal(t, "with domain loaded", res.Error.Value)

	res = run(t, rt, mark, coderuntime.Request{Language: coderuntime.Node, Code: "Promise.reject(42);\n"})
	assert.Equal(t, 1, res.ExitCode)
	assert.Contains(t, res.Stderr.Tail, `The promise rejected with the reason "42".`, "node's own wording")
}

func TestPipesHeldShortDrain(t *testing.T) {
	rt := newRuntime(t, coderuntime.Config{})
	needs(t, rt, coderuntime.Python3)
	mark := marked(t)
	// A child that keeps the code's stdout: the run settles after the drain grace, says so,
	// and ends the child.
	res := run(t, rt, mark, coderuntime.Request{Language: coderuntime.Python3,
		Code: "import subprocess\nsubprocess.Popen(['sleep', '1000'])\nprint('started')\n"})
	assert.Equal(t, "started\n", res.Stdout.Tail)
	assert.Equal(t, 0, res.ExitCode)
	assert.True(t, res.PipesHeld, "the child held stdout past the drain grace")
	assert.Empty(t, testutil.Marked(mark), "the child is ended")
}
