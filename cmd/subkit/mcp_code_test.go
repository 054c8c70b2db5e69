//go:build unix

package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// code_session_run reports in its text and structured content what a cell's session says
// besides its output: the traceback of its error, the interpreter's end, background errors,
// results from earlier cells and notes.
func TestMcpCodeCellReports(t *testing.T) {
	needProgram(t, "python3")
	needProgram(t, "node")
	c := mcpStart(t, "inprocess")
	open := func(lang string) string {
		var sess codeSessionOut
		c.callOK(t, "code_session_open", map[string]any{"language": lang}, &sess)
		return sess.ID
	}
	py := open("python3")
	var cell cellResult
	text := c.callOK(t, "code_session_run", map[string]any{"id": py, "code": "d = {}\nd['missing']\n"}, &cell)
	require.NotNil(t, cell.Error)
	assert.Contains(t, text, "[error: KeyError: 'missing']\n")
	assert.Contains(t, text, "line 2", "the traceback's lines are in the text")
	assert.Contains(t, text, "    d['missing']\n", "the traceback's source lines are in the text")

	text = c.callOK(t, "code_session_run", map[string]any{"id": py, "code": "import ctypes\nctypes.string_at(0)\n"}, &cell)
	assert.True(t, cell.Restarted)
	require.NotNil(t, cell.InterpreterExit)
	assert.Equal(t, "SIGSEGV", cell.InterpreterExit.Signal)
	assert.Contains(t, text, "[the interpreter was restarted after it was killed by signal SIGSEGV: the session's earlier state is gone]\n")

	js := open("node")
	c.callOK(t, "code_session_run", map[string]any{"id": js, "code": strings.Split(nodeBackgroundCells, "// %%\n")[1]}, &cell)
	assert.Empty(t, cell.BackgroundErrors)
	text = c.callOK(t, "code_session_run", map[string]any{"id": js, "code": strings.Split(nodeBackgroundCells, "// %%\n")[2]}, &cell)
	require.Len(t, cell.BackgroundErrors, 1, text)
	assert.Equal(t, 1, cell.BackgroundErrors[0].Cell)
	assert.Equal(t, "late", cell.BackgroundErrors[0].Value)
	assert.Contains(t, text, "[background error: raised by code cell 1 left running: Error: late]\nError: late\n    at ")
	assert.Contains(t, text, "Out[2]: 'after'\n")

	c.callOK(t, "code_session_run", map[string]any{"id": js, "code": "display.html('<b>first</b>'); display.markdown('second');\n" +
		"globalThis.shown = new Promise(r => setTimeout(() => { display.html('<i>later</i>'); r(); }, 100));\nundefined\n"}, &cell)
	text = c.callOK(t, "code_session_run", map[string]any{"id": js, "code": "await shown;\nawait new Promise(r => setImmediate(r));\n"}, &cell)
	require.Len(t, cell.Results, 1, text)
	assert.Equal(t, 3, cell.Results[0].FromCell)
	assert.Contains(t, text, "[from cell 3] <display data: text/html>\n")
}

func TestMcpCodeCellResultsInOrder(t *testing.T) {
	needProgram(t, "node")
	c := mcpStart(t, "inprocess")
	var sess codeSessionOut
	c.callOK(t, "code_session_open", map[string]any{"language": "node"}, &sess)
	var cell cellResult
	text := c.callOK(t, "code_session_run", map[string]any{"id": sess.ID, "code": "display(1); display(2); 3"}, &cell)
	assert.Equal(t, "(no output)\n1\n2\nOut[1]: 3\n", text, "the results in their order")
}

func TestMcpCodeCellNotes(t *testing.T) {
	needMatplotlib(t)
	c := mcpStart(t, "inprocess")
	var sess codeSessionOut
	c.callOK(t, "code_session_open", map[string]any{"language": "python3"}, &sess)
	var cell cellResult
	text := c.callOK(t, "code_session_run", map[string]any{"id": sess.ID, "code": "import matplotlib\nmatplotlib.use('TkAgg')\n"}, &cell)
	require.NotEmpty(t, cell.Notes, text)
	assert.Contains(t, text, "[note: ")
}
