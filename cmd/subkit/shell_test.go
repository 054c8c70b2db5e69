//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/shell"
)

func writeScript(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "script")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
	return p
}

// One session runs the script's lines: state stays, a REPL gets the "> " lines, and every
// step says how it ended.
func TestShellScriptJSON(t *testing.T) {
	script := writeScript(t, strings.Join([]string{
		"cd /usr",
		"export X=41",
		"echo $((X+1)) from $(pwd)",
		"",
		"false",
		"echo )",
		"cat",
		"> typed into cat",
		"> \x04",
		"printf 'no newline'",
		"exit 3",
		"echo after",
	}, "\n"))
	// cat waits for input: its steps end as soon as it does (Linux: an event, which the yield
	// only bounds), or at the yield, which is short for that reason elsewhere; every other
	// line ends at its prompt.
	code, out, _ := cli(t, "", "shell", "--script", script, "--yield", waitingYield.String(), "--json")
	require.Equal(t, 0, code, out)
	o := decode[shellOutput](t, out)
	require.Len(t, o.Steps, 11, "the empty line is skipped")
	want := []struct {
		state  string
		exit   int
		output string
	}{
		{"completed", 0, ""},
		{"completed", 0, ""},
		{"completed", 0, "42 from /usr\n"},
		{"completed", 1, ""},
		{"syntax_error", 2, "bash: line 1: syntax error near unexpected token `)'\nbash: line 1: `echo )'"},
		{waitingState, -1, ""},
		{waitingState, -1, "typed into cat\ntyped into cat\n"}, // the terminal's echo, then cat's copy
		{"completed", 0, "\n"},                                 // the echo of the newline after Ctrl-D
		{"completed", 0, "no newline"},
		{"exited", 3, ""},
		{"refused", -1, ""},
	}
	for i, w := range want {
		st := o.Steps[i]
		assert.Equal(t, w.state, st.State, "step %d %q", i, st.Command)
		if w.exit >= 0 {
			require.NotNil(t, st.ExitCode, "step %d", i)
			assert.Equal(t, w.exit, *st.ExitCode, "step %d", i)
		} else {
			assert.Nil(t, st.ExitCode, "step %d", i)
		}
		if w.state != "refused" {
			assert.Equal(t, w.output, st.Output, "step %d", i)
		}
	}
	assert.Equal(t, "/usr", o.Steps[2].Cwd)
	assert.Equal(t, "cat", o.Steps[5].Foreground)
	if waitingState == string(shell.StateWaitingInput) {
		require.NotNil(t, o.Steps[5].Input)
		assert.Equal(t, "cat", o.Steps[5].Input.Comm)
		assert.True(t, o.Steps[5].Input.LineMode)
		assert.False(t, o.Steps[5].Input.EchoOff)
	}
	assert.Contains(t, o.Steps[10].Output, "exited")
	assert.Nil(t, o.ExitCode, "the last step was refused")
}

func TestShellScriptText(t *testing.T) {
	script := writeScript(t, "echo hi\n(exit 4)\n")
	code, out, _ := cli(t, "", "shell", "--script", script)
	assert.Equal(t, 4, code, "the last step's exit code")
	assert.Equal(t, "$ echo hi\nhi\n$ (exit 4)\n[exit code 4]\n", out)
}

func TestShellScriptErrors(t *testing.T) {
	for _, args := range [][]string{
		{"shell", "--json"},
		{"shell", "--json", "--script", "/no/such/file"},
		{"shell", "--json", "--script", "x", "extra"},
		{"shell", "--json", "--script", "x", "--yield", "0s"},
		{"shell", "--json", "--script", "x", "--yield", "100h"},
	} {
		code, out, _ := cli(t, "", args...)
		assert.Equal(t, exitUsage, code, "%v", args)
		assert.Contains(t, out, `"invalid"`, "%v", args)
	}
	code, out, _ := cli(t, "", "shell", "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "usage: subkit shell")
}

// A password prompt says so in the text and the JSON, at once.
func TestShellScriptWaitingForInput(t *testing.T) {
	if waitingState != string(shell.StateWaitingInput) {
		t.Skip("waiting_for_input is told on Linux only")
	}
	script := writeScript(t, "read -rs -p 'Password: ' pw; echo; echo ${#pw}\n> secret\n")
	code, out, _ := cli(t, "", "shell", "--script", script, "--yield", "5m")
	assert.Equal(t, 0, code)
	assert.Equal(t, "$ read -rs -p 'Password: ' pw; echo; echo ${#pw}\nPassword: \n"+
		"[waiting for input (echo off): bash (pid ", out[:len("$ read -rs -p 'Password: ' pw; echo; echo ${#pw}\nPassword: \n[waiting for input (echo off): bash (pid ")])
	assert.Contains(t, out, ") reads the terminal in line mode (end the input with a newline); a \"> \" line types into it]\n> secret\n\n6\n")
}

// A full-screen program's step carries its screen, in the JSON and the text.
func TestShellScriptScreen(t *testing.T) {
	if waitingState != string(shell.StateWaitingInput) {
		t.Skip("waiting_for_input is told on Linux only")
	}
	if _, err := exec.LookPath("vim"); err != nil {
		t.Skip("no vim")
	}
	file := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(file, []byte("first line here\n"), 0o600))
	script := writeScript(t, "vim -u NONE -N -n "+file+"\n> :q!\n")
	code, out, _ := cli(t, "", "shell", "--script", script, "--yield", "5m", "--json")
	require.Equal(t, 0, code, out)
	o := decode[shellOutput](t, out)
	require.Len(t, o.Steps, 2)
	assert.Equal(t, "waiting_for_input", o.Steps[0].State)
	assert.True(t, strings.HasPrefix(o.Steps[0].Screen, "first line here\n~"), "%q", o.Steps[0].Screen)
	assert.Equal(t, "completed", o.Steps[1].State)

	code, out, _ = cli(t, "", "shell", "--script", script, "--yield", "5m")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "[screen of the full-screen program:]\nfirst line here\n~")
}
