//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
)

// codeCLI runs `subkit code ARGS...` in-process (args[0] is "code") with a marked
// environment and a private temp dir, bounded by ctx.
func codeCLI(t *testing.T, ctx context.Context, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	require.Equal(t, "code", args[0])
	mark := testutil.Mark()
	testutil.NoLeaks(t, mark)
	t.Setenv(testutil.MarkVar, mark)
	tmp := t.TempDir()
	testutil.EmptyDir(t, tmp)
	t.Setenv("TMPDIR", tmp)
	var out, errb bytes.Buffer
	code = cmdCode(ctx, args[1:], strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func codeRun(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	return codeCLI(t, context.Background(), stdin, args...)
}

func needProgram(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s is not installed", name)
	}
}

func TestCodeJSONException(t *testing.T) {
	needProgram(t, "python3")
	code, out, _ := codeRun(t, "", "code", "--lang", "python3", "--json", "print('hi')\nraise ValueError('bad value')\n")
	require.Equal(t, 0, code)
	o := decode[codeResult](t, out)
	assert.Equal(t, "python3", o.Language)
	require.NotNil(t, o.ExitCode)
	assert.Equal(t, 1, *o.ExitCode)
	assert.Equal(t, "hi\n", o.Stdout.Tail)
	require.NotNil(t, o.Error)
	assert.Equal(t, "ValueError", o.Error.Name)
	assert.Equal(t, "bad value", o.Error.Value)
	assert.Contains(t, o.Error.Traceback, `File "main.py", line 2`)
	assert.Contains(t, o.Stderr.Tail, "ValueError: bad value")
	assert.Contains(t, out, `"error":{"name":"ValueError","value":"bad value","traceback":`)
}

func TestCodeJSONExitAndNoError(t *testing.T) {
	code, out, _ := codeRun(t, "", "code", "--lang", "bash", "--json", "echo out; echo err >&2; exit 3")
	require.Equal(t, 0, code)
	o := decode[codeResult](t, out)
	require.NotNil(t, o.ExitCode)
	assert.Equal(t, 3, *o.ExitCode)
	assert.Equal(t, "out\n", o.Stdout.Tail)
	assert.Equal(t, "err\n", o.Stderr.Tail)
	assert.Nil(t, o.Error)
	assert.NotContains(t, out, `"error"`, "error appears only when the code raised")
	assert.Contains(t, out, `"spill_path":""`, "streams as in subkit exec")
}

func TestCodePipesHeld(t *testing.T) {
	code, out, _ := codeRun(t, "", "code", "--lang", "bash", "--json", "sleep 1000 & echo up")
	require.Equal(t, 0, code)
	o := decode[codeResult](t, out)
	assert.True(t, o.PipesHeld, "a child kept stdout open past the drain grace")
	assert.Equal(t, "up\n", o.Stdout.Tail)
	assert.Contains(t, out, `"pipes_held":true`)
}

func TestCodeTimeout(t *testing.T) {
	code, out, _ := codeRun(t, "", "code", "--lang", "bash", "--json", "--timeout", "3s", "--grace", "200ms",
		"sleep 1000 & echo up; wait")
	require.Equal(t, 0, code)
	o := decode[codeResult](t, out)
	assert.True(t, o.TimedOut)
	assert.Equal(t, "SIGTERM", o.Signal)
	assert.Nil(t, o.ExitCode)
	assert.Contains(t, out, `"exit_code":null`)
	assert.Equal(t, "up\n", o.Stdout.Tail)

	code, _, errOut := codeRun(t, "", "code", "--lang", "bash", "--timeout", "200ms", "sleep 10")
	assert.Equal(t, exitTimeout, code)
	assert.Contains(t, errOut, "timed out")
}

func TestCodePlain(t *testing.T) {
	code, out, errOut := codeRun(t, "", "code", "--lang", "bash", "echo hi; echo oops >&2; exit 7")
	assert.Equal(t, 7, code)
	assert.Equal(t, "hi\n", out)
	assert.Equal(t, "oops\n", errOut)
	code, _, _ = codeRun(t, "", "code", "--lang", "bash", "kill -KILL $$")
	assert.Equal(t, 128+9, code)
}

func TestCodeFromStdinAndStdinFile(t *testing.T) {
	code, out, _ := codeRun(t, "echo from stdin; read -r x || echo eof", "code", "--lang", "bash", "-")
	assert.Equal(t, 0, code)
	assert.Equal(t, "from stdin\neof\n", out, "the code read from stdin gets the null device as stdin")

	f := filepath.Join(t.TempDir(), "in")
	require.NoError(t, os.WriteFile(f, []byte("line one\n"), 0o600))
	code, out, _ = codeRun(t, "", "code", "--lang", "bash", "--stdin-file", f, "read -r x; echo \"got $x\"")
	assert.Equal(t, 0, code)
	assert.Equal(t, "got line one\n", out)

	code, out, _ = codeRun(t, "piped", "code", "--lang", "bash", "--stdin-file", "-", "cat")
	assert.Equal(t, 0, code)
	assert.Equal(t, "piped", out)
}

func TestCodeTruncationUTF8(t *testing.T) {
	code, out, _ := codeRun(t, "", "code", "--lang", "bash", "--json", "--tail-bytes", "5", "printf ééé")
	require.Equal(t, 0, code)
	o := decode[codeResult](t, out)
	assert.Equal(t, "éé", o.Stdout.Tail)
	assert.True(t, o.Stdout.Truncated)
	assert.EqualValues(t, 6, o.Stdout.TotalBytes)

	code, _, errOut := codeRun(t, "", "code", "--lang", "bash", "--tail-bytes", "4", "seq 1 100")
	assert.Equal(t, 0, code)
	assert.Contains(t, errOut, "stdout truncated")
}

func TestCodeInterrupted(t *testing.T) {
	ctx, ready := testutil.CancelOnSignal(t)
	code, out, _ := codeCLI(t, ctx, "", "code", "--lang", "bash", "--json", "--grace", "200ms", "echo hi; echo > "+ready+"; sleep 1000")
	require.Equal(t, exitCancelled, code, "interrupted, under --json too")
	o := decode[codeResult](t, out)
	assert.True(t, o.Cancelled)
	assert.Equal(t, "hi\n", o.Stdout.Tail)

	ctx, ready = testutil.CancelOnSignal(t)
	code, _, errOut := codeCLI(t, ctx, "", "code", "--lang", "bash", "--grace", "200ms", "echo > "+ready+"; sleep 1000")
	assert.Equal(t, exitCancelled, code)
	assert.Contains(t, errOut, "interrupted")
}

// --timeout 0 is no timeout, and the JSON says which applied.
func TestCodeTimeoutZero(t *testing.T) {
	code, out, _ := codeCLI(t, context.Background(), "", "code", "--lang", "python3", "--json", "--timeout", "0", "print(1)")
	require.Equal(t, 0, code, out)
	o := decode[codeResult](t, out)
	assert.Equal(t, int64(0), o.TimeoutMs)
	assert.Equal(t, "1\n", o.Stdout.Tail)
	assert.False(t, o.TimedOut)
	code, out, _ = codeCLI(t, context.Background(), "", "code", "--lang", "python3", "--json", "--timeout", "7s", "print(1)")
	require.Equal(t, 0, code, out)
	assert.Equal(t, int64(7000), decode[codeResult](t, out).TimeoutMs)
}

func TestCodeErrors(t *testing.T) {
	cases := []struct {
		args []string
		kind string
		code int
	}{
		{[]string{"echo"}, "invalid", exitUsage},
		{[]string{"--lang", "cobol", "x"}, "invalid", exitUsage},
		{[]string{"--lang", "bash"}, "invalid", exitUsage},
		{[]string{"--lang", "bash", "a", "b"}, "invalid", exitUsage},
		{[]string{"--lang", "bash", "--timeout", "-1s", "x"}, "invalid", exitUsage},
		{[]string{"--lang", "bash", "--tail-bytes", "0", "x"}, "invalid", exitUsage},
		{[]string{"--lang", "bash", "--stdin-file", "-", "-"}, "invalid", exitUsage},
		{[]string{"--lang", "bash", "--stdin-file", "/no/such/file", "x"}, "invalid", exitUsage},
		{[]string{"--bogus"}, "invalid", exitUsage},
		{[]string{"--lang", "bash", "--interpreter", "subkit-no-such-bash", "x"}, "not_found", exitNotFound},
	}
	for _, c := range cases {
		code, out, _ := codeRun(t, "", append([]string{"code", "--json"}, c.args...)...)
		assert.Equal(t, c.code, code, "%v", c.args)
		o := decode[errorOutput](t, out)
		assert.Equal(t, c.kind, o.Error.Kind, "%v", c.args)
		assert.NotEmpty(t, o.Error.Message)

		code, out, errOut := codeRun(t, "", append([]string{"code"}, c.args...)...)
		assert.Equal(t, c.code, code, "%v", c.args)
		assert.Empty(t, out)
		assert.Contains(t, errOut, "subkit:")
	}
	_, out, _ := codeRun(t, "", "code", "--json", "--lang", "bash", "--interpreter", "subkit-no-such-bash", "x")
	assert.Contains(t, out, "subkit-no-such-bash", "the error names what was searched")
}

func TestCodeHelp(t *testing.T) {
	code, out, _ := codeRun(t, "", "code", "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "--lang")
	assert.Contains(t, out, `"error":{"name","value","traceback"}`)
}

// cellsFile writes cells to a file in a temp dir and returns its path.
func cellsFile(t *testing.T, cells string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "cells.py")
	require.NoError(t, os.WriteFile(f, []byte(cells), 0o600))
	return f
}

func TestCodeCellsJSON(t *testing.T) {
	needProgram(t, "python3")
	f := cellsFile(t, "# %%\nx = 41\nprint('set')\n# %% [markdown]\n# notes, not run\n# %%\nx + 1\n# %%\n\n# %% the last\n1/0\n")
	code, out, _ := codeRun(t, "", "code", "--lang", "python3", "--cells", f, "--json")
	require.Equal(t, 0, code, out)
	o := decode[cellsOutput](t, out)
	assert.Equal(t, "python3", o.Language)
	require.Len(t, o.Executions, 3, "the markdown and the empty cell are skipped")
	first, second, third := o.Executions[0], o.Executions[1], o.Executions[2]
	assert.Equal(t, 1, first.ExecutionCount)
	assert.Equal(t, "set\n", first.Stdout.Tail)
	assert.Empty(t, first.Results)
	assert.Nil(t, first.Error)
	assert.Equal(t, 2, second.ExecutionCount)
	require.Len(t, second.Results, 1)
	assert.True(t, second.Results[0].Main)
	assert.Equal(t, "42", second.Results[0].MIME["text/plain"], "the state is shared by the cells")
	require.NotNil(t, third.Error)
	assert.Equal(t, "ZeroDivisionError", third.Error.Name)
	assert.Contains(t, third.Error.Traceback, "<cell-3>")
	assert.Equal(t, "42", second.Results[0].Text)
	assert.Contains(t, out, `"results":[{"main":true,"text":"42","mime_types":["text/plain"],"mime":{"text/plain":"42"},"from_cell":0}]`)
	assert.Contains(t, out, `"results":[],"results_dropped":0,"background_errors":[],"background_errors_dropped":0,"notes":[],"timed_out":false`,
		"results is a list, and error absent when none")
}

func TestCodeCellsStopAtErrorOrKeepGoing(t *testing.T) {
	needProgram(t, "python3")
	f := cellsFile(t, "# %%\nraise ValueError('first')\n# %%\nprint('second')\n")
	code, out, errOut := codeRun(t, "", "code", "--lang", "python3", "--cells", f)
	assert.Equal(t, exitFailure, code)
	assert.Empty(t, out, "the cell after the error did not run")
	assert.Contains(t, errOut, "ValueError: first")

	code, out, _ = codeRun(t, "", "code", "--lang", "python3", "--cells", f, "--keep-going")
	assert.Equal(t, exitFailure, code)
	assert.Equal(t, "second\n", out)
}

func TestCodeCellsText(t *testing.T) {
	needProgram(t, "node")
	code, out, errOut := codeRun(t, "// %%\nlet a = 1;\nconsole.log('a set');\n// %%\ndisplay.html('<b>b</b>');\na + 1\n",
		"code", "--lang", "node", "--cells", "-")
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "a set\n<display data: text/html>\nOut[2]: 2\n", out)
}

func TestCodeCellsTimeoutInterrupts(t *testing.T) {
	needProgram(t, "python3")
	f := cellsFile(t, "# %%\nx = 5\n# %%\nwhile True:\n    pass\n# %%\nx\n")
	code, out, _ := codeRun(t, "", "code", "--lang", "python3", "--cells", f, "--timeout", "1s", "--grace", "30s", "--keep-going", "--json")
	require.Equal(t, 0, code)
	o := decode[cellsOutput](t, out)
	require.Len(t, o.Executions, 3)
	assert.True(t, o.Executions[1].TimedOut)
	assert.True(t, o.Executions[1].Interrupted)
	assert.False(t, o.Executions[1].Restarted)
	require.Len(t, o.Executions[2].Results, 1)
	assert.Equal(t, "5", o.Executions[2].Results[0].MIME["text/plain"], "the state survived the interrupt")
}

func TestCodeCellsErrors(t *testing.T) {
	f := cellsFile(t, "# %%\n1\n")
	cases := []struct {
		args []string
		kind string
		code int
	}{
		{[]string{"--lang", "bash", "--cells", f}, "invalid", exitUsage},
		{[]string{"--lang", "python3", "--cells", f, "extra"}, "invalid", exitUsage},
		{[]string{"--lang", "python3", "--cells", f, "--stdin-file", f}, "invalid", exitUsage},
		{[]string{"--lang", "python3", "--keep-going", "1"}, "invalid", exitUsage},
		{[]string{"--lang", "python3", "--cells", "/no/such/file"}, "invalid", exitUsage},
		{[]string{"--lang", "python3", "--cells", f, "--interpreter", "subkit-no-such-python"}, "not_found", exitNotFound},
	}
	for _, c := range cases {
		code, out, _ := codeRun(t, "", append([]string{"code", "--json"}, c.args...)...)
		assert.Equal(t, c.code, code, "%v", c.args)
		o := decode[errorOutput](t, out)
		assert.Equal(t, c.kind, o.Error.Kind, "%v", c.args)
	}
}

func TestSplitCells(t *testing.T) {
	assert.Equal(t, []string{"a = 1\n"}, splitCells("a = 1\n"), "a file without markers is one cell")
	assert.Equal(t, []string{"a\n", "b\n", "c"}, splitCells("# %%\na\n  # %% indented\nb\n// %%\nc"))
	assert.Empty(t, splitCells("# %% [md]\ntext\n# %%\n\n"))
}

// A cell that crashes the interpreter says how it ended, in the text and the JSON.
func TestCodeCellsInterpreterExit(t *testing.T) {
	needProgram(t, "python3")
	f := cellsFile(t, "# %%\nx = 1\n# %%\nimport ctypes\nctypes.string_at(0)\n")
	code, _, errOut := codeRun(t, "", "code", "--lang", "python3", "--cells", f)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "[subkit: the interpreter was killed by signal SIGSEGV during cell 2 and was restarted; its state is gone]")

	code, out, _ := codeRun(t, "", "code", "--lang", "python3", "--cells", f, "--json")
	require.Equal(t, 0, code)
	o := decode[cellsOutput](t, out)
	require.Len(t, o.Executions, 2)
	assert.Nil(t, o.Executions[0].InterpreterExit)
	ex := o.Executions[1]
	assert.True(t, ex.Restarted)
	require.NotNil(t, ex.InterpreterExit)
	assert.Equal(t, "SIGSEGV", ex.InterpreterExit.Signal)
	assert.Nil(t, ex.InterpreterExit.ExitCode)
	assert.Contains(t, out, `"interpreter_exit":{"exit_code":null,"signal":"SIGSEGV"}`)
}

// nodeBackgroundCells: the first cell leaves a timer that throws; the second waits for it.
const nodeBackgroundCells = "// %%\nglobalThis.fired = new Promise(r => setTimeout(() => { r(); throw new Error(\"late\") }, 100));\nundefined\n" +
	"// %%\nawait fired;\nawait new Promise(r => setImmediate(r));\n'after'\n"

// An error thrown by code an earlier cell left running is reported with the cell that ran
// then, naming the cell that started it, which keeps its own result.
func TestCodeCellsBackgroundError(t *testing.T) {
	needProgram(t, "node")
	code, out, errOut := codeRun(t, nodeBackgroundCells, "code", "--lang", "node", "--cells", "-")
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "Out[2]: 'after'\n", out)
	assert.Contains(t, errOut, "[subkit: background error: raised by code cell 1 left running]\nError: late\n    at ")

	code, out, _ = codeRun(t, nodeBackgroundCells, "code", "--lang", "node", "--cells", "-", "--json")
	require.Equal(t, 0, code)
	o := decode[cellsOutput](t, out)
	require.Len(t, o.Executions, 2)
	assert.Empty(t, o.Executions[0].BackgroundErrors)
	ex := o.Executions[1]
	require.Len(t, ex.BackgroundErrors, 1, out)
	bg := ex.BackgroundErrors[0]
	assert.Equal(t, 1, bg.Cell)
	assert.Equal(t, "Error", bg.Name)
	assert.Equal(t, "late", bg.Value)
	assert.Contains(t, bg.Traceback, "<cell-1>")
	assert.Nil(t, ex.Error, "the running cell did not raise")
	require.Len(t, ex.Results, 1)
	assert.Equal(t, 0, ex.Results[0].FromCell)
	assert.Contains(t, out, `"background_errors":[{"cell":1,"name":"Error","value":"late","traceback":`)
	assert.Contains(t, out, `"background_errors_dropped":0,"notes":[]`)
}

// A result displayed by an earlier cell's callback names that cell.
func TestCodeCellsFromCell(t *testing.T) {
	needProgram(t, "node")
	cells := "// %%\nglobalThis.shown = new Promise(r => setTimeout(() => { display.html('<i>later</i>'); r(); }, 100));\nundefined\n" +
		"// %%\nawait shown;\nawait new Promise(r => setImmediate(r));\n"
	code, out, errOut := codeRun(t, cells, "code", "--lang", "node", "--cells", "-")
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "[from cell 1] <display data: text/html>\n", out)

	code, out, _ = codeRun(t, cells, "code", "--lang", "node", "--cells", "-", "--json")
	require.Equal(t, 0, code)
	o := decode[cellsOutput](t, out)
	require.Len(t, o.Executions, 2)
	require.Len(t, o.Executions[1].Results, 1, out)
	assert.Equal(t, 1, o.Executions[1].Results[0].FromCell)
	assert.False(t, o.Executions[1].Results[0].Main)
}

// needMatplotlib skips a test when python3 lacks matplotlib.
func needMatplotlib(t *testing.T) {
	t.Helper()
	needProgram(t, "python3")
	if err := exec.Command("python3", "-c", "import matplotlib").Run(); err != nil {
		t.Skip("python3 has no matplotlib module: the session's notes about it cannot be tested")
	}
}

// A GUI matplotlib backend is replaced, and the cell's notes say so.
func TestCodeCellsNotes(t *testing.T) {
	needMatplotlib(t)
	f := cellsFile(t, "# %%\nimport matplotlib\nmatplotlib.use('TkAgg')\n")
	code, _, errOut := codeRun(t, "", "code", "--lang", "python3", "--cells", f)
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "[subkit: note: ")

	code, out, _ := codeRun(t, "", "code", "--lang", "python3", "--cells", f, "--json")
	require.Equal(t, 0, code)
	o := decode[cellsOutput](t, out)
	require.Len(t, o.Executions, 1)
	require.NotEmpty(t, o.Executions[0].Notes, out)
	assert.Contains(t, o.Executions[0].Notes[0], "TkAgg")
}
