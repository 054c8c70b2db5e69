package shell

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A program blocked reading the terminal is reported waiting_for_input as soon as its output
// settles, never after the whole yield: a read prompt, grep on stdin, a python REPL line and
// a password prompt (echo off). The yields are 30 s; the test's context bounds what would hang.
func TestShellWaitingForInput(t *testing.T) {
	s := newSession(t)
	// A yield far beyond the calls' one-minute contexts: a call that did not return on its own
	// fails with the context's error.
	const yield = DefaultMaxYield
	for _, tc := range []struct {
		name, command string
		comm          string
		prompt        string
		lineMode      bool
		echoOff       bool
		answer        string
		output        string
	}{
		{"read prompt", `read -r -p "Continue? [Y/n] " a; echo "answer=$a"`, "bash", "Continue? [Y/n] ", true, false, "y\n", "y\nanswer=y\n"},
		{"grep on stdin", "grep TODO", "grep", "", true, false, "a TODO here\n\x04", "a TODO here\na TODO here\n"},
		{"password", `read -rs -p "Password: " pw; echo; echo "len=${#pw}"`, "bash", "Password: ", true, true, "hunter2\n", "\nlen=7\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			st, err := s.Run(ctxT(t, time.Minute), tc.command, yield)
			took := time.Since(start)
			require.NoError(t, err)
			require.Equal(t, StateWaitingInput, st.State, "%+v", st)
			t.Logf("%s: waiting_for_input after %v", tc.name, took)
			require.NotNil(t, st.Input)
			assert.Equal(t, tc.comm, st.Input.Comm)
			assert.NotZero(t, st.Input.Pid)
			assert.True(t, st.Input.ModesKnown)
			assert.Equal(t, tc.lineMode, st.Input.LineMode)
			assert.Equal(t, tc.echoOff, st.Input.EchoOff)
			assert.Equal(t, tc.prompt, st.Input.Prompt)
			assert.Equal(t, tc.prompt, st.Output)
			assert.Equal(t, -1, st.ExitCode)
			if tc.echoOff {
				assert.Equal(t, "waiting for input (echo off)", st.Input.Describe())
			}

			assert.Equal(t, StateWaitingInput, s.Info().State)

			// A Poll with nothing new confirms at once.
			st, err = s.Poll(ctxT(t, time.Minute), yield)
			require.NoError(t, err)
			assert.Equal(t, StateWaitingInput, st.State)
			assert.Equal(t, "", st.Output)
			assert.Equal(t, tc.prompt, st.Input.Prompt)

			var out strings.Builder
			st, err = s.Write(ctxT(t, time.Minute), tc.answer, yield)
			require.NoError(t, err)
			out.WriteString(st.Output)
			for st.State != StateCompleted {
				require.Equal(t, StateWaitingInput, st.State, "%+v", st)
				st, err = s.Poll(ctxT(t, time.Minute), yield)
				require.NoError(t, err)
				out.WriteString(st.Output)
			}
			assert.Equal(t, tc.output, out.String())
		})
	}
}

// A python REPL line answered in milliseconds returns in milliseconds, with the next prompt.
func TestShellREPLWaitingForInput(t *testing.T) {
	lookPath(t, "python3")
	s := newSession(t)
	// A yield far beyond the calls' one-minute contexts: a call that did not return on its own
	// fails with the context's error.
	const yield = DefaultMaxYield
	st, err := s.Run(ctxT(t, time.Minute), "python3 -q", yield)
	require.NoError(t, err)
	require.Equal(t, StateWaitingInput, st.State, "%+v", st)
	assert.Equal(t, ">>> ", st.Input.Prompt)
	assert.False(t, st.Input.LineMode, "readline reads keys")
	assert.False(t, st.Input.EchoOff)
	assert.True(t, strings.HasPrefix(st.Input.Comm, "python"), st.Input.Comm)
	for i := 0; i < 3; i++ {
		start := time.Now()
		st, err = s.Write(ctxT(t, time.Minute), "1+1\n", yield)
		took := time.Since(start)
		require.NoError(t, err)
		require.Equal(t, StateWaitingInput, st.State, "%+v", st)
		assert.Equal(t, "1+1\n2\n>>> ", st.Output)
		t.Logf("1+1 answered after %v", took)
	}
	st, err = s.Write(ctxT(t, time.Minute), "exit()\n", yield)
	require.NoError(t, err)
	assert.Equal(t, StateCompleted, st.State)
}

// Busy programs are never taken for waiting ones: a sleep, a loop of the shell's own, a
// program reading a pipe, and a program polling a socket.
func TestShellBusyIsNotWaiting(t *testing.T) {
	lookPath(t, "python3")
	s := newSession(t)
	for _, cmd := range []string{
		"sleep 100",
		"while :; do :; done",
		"sleep 100 | cat",
		`python3 -c 'import socket; a, b = socket.socketpair(); a.recv(1)'`,
		`python3 -c 'import select, os; r, w = os.pipe(); select.select([r], [], [])'`,
	} {
		st, err := s.Run(ctxT(t, time.Minute), cmd, time.Second)
		require.NoError(t, err)
		assert.Equal(t, StateRunning, st.State, "%s: %+v", cmd, st)
		assert.Nil(t, st.Input)
		st, err = s.Interrupt(ctxT(t, time.Minute), time.Minute)
		require.NoError(t, err)
		require.Equal(t, StateCompleted, st.State, "%s: %+v", cmd, st)
	}
}

// A shell that replaces the session's (exec bash) or runs inside it (bash) gets the session's
// markers too: exit codes and the cwd stay right, and exit returns to the shell before. Any
// other program with a prompt of its own (sh) is waiting_for_input, never a wedge.
func TestShellNestedShells(t *testing.T) {
	s := newSession(t)
	tmp := t.TempDir()
	run(t, s, "export HOME="+t.TempDir())                       // no startup file of the host's user in the new shells
	level := strings.TrimSpace(run(t, s, "echo $SHLVL").Output) // the session's: its environment's plus one
	n, err := strconv.Atoi(level)
	require.NoError(t, err, "SHLVL %q", level)
	nested := strconv.Itoa(n+1) + "\n"
	st := run(t, s, "exec bash")
	assert.Equal(t, 0, st.ExitCode)
	require.NotEmpty(t, st.Notes)
	assert.Contains(t, st.Notes[0], "a new bash reads the commands now")
	st = run(t, s, "cd "+tmp+"; false")
	assert.Equal(t, 1, st.ExitCode)
	assert.Equal(t, tmp, st.Cwd)
	assert.Equal(t, level+"\n", run(t, s, "echo $SHLVL").Output, "exec keeps the level")

	st = run(t, s, "bash")
	assert.Equal(t, 0, st.ExitCode)
	st = run(t, s, "echo $SHLVL; cd /; (exit 5)")
	assert.Equal(t, nested, st.Output)
	assert.Equal(t, 5, st.ExitCode)
	assert.Equal(t, "/", st.Cwd)
	st = run(t, s, "exit 3")
	assert.Equal(t, 3, st.ExitCode, "the nested shell's status, from the shell before it")
	assert.Equal(t, tmp, st.Cwd)
	st = run(t, s, "echo $SHLVL; pwd")
	assert.Equal(t, level+"\n"+tmp+"\n", st.Output)

	lookPath(t, "sh")
	st, err = s.Run(ctxT(t, time.Minute), "sh", time.Minute)
	require.NoError(t, err)
	require.Equal(t, StateWaitingInput, st.State, "%+v", st)
	assert.Equal(t, "sh", st.Input.Comm)
	st, err = s.Write(ctxT(t, time.Minute), "echo in-sh; exit 4\n", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, StateCompleted, st.State, "%+v", st)
	assert.Equal(t, 4, st.ExitCode)
	assert.Contains(t, st.Output, "in-sh\n")
	assert.Equal(t, "ok\n", run(t, s, "echo ok").Output)
}

// Full-screen programs are a screen: watch shows the date, vim the file's first line, and
// the keys typed into vim work; line-mode output before and after stays in Output.
func TestShellFullScreen(t *testing.T) {
	lookPath(t, "watch")
	lookPath(t, "vim")
	s := newSession(t)
	year := time.Now().Format("2006")
	st, err := s.Run(ctxT(t, time.Minute), "echo before; watch -n1 date", 200*time.Millisecond)
	require.NoError(t, err)
	out, st := pollUntil(t, s, st, func(_ string, st Step) bool { return strings.Contains(st.Screen, year) })
	assert.Equal(t, "before\n", out, "the screen's bytes are not output")
	assert.Contains(t, st.Screen, "Every 1")
	assert.LessOrEqual(t, strings.Count(st.Screen, "\n"), DefaultRows-1)
	st, err = s.Interrupt(ctxT(t, time.Minute), time.Minute)
	require.NoError(t, err)
	assert.Equal(t, StateCompleted, st.State)

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("the first line of the file\nsecond\n"), 0o600))
	st, err = s.Run(ctxT(t, time.Minute), "vim -u NONE -N -n "+filepath.Join(dir, "notes.txt"), time.Minute)
	require.NoError(t, err)
	require.Equal(t, StateWaitingInput, st.State, "%+v", st)
	assert.True(t, strings.HasPrefix(st.Screen, "the first line of the file\nsecond\n~"), "%q", st.Screen)
	assert.Equal(t, "vim", st.Input.Comm)
	st, err = s.Write(ctxT(t, time.Minute), "ggdd:wq\r", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, StateCompleted, st.State, "%+v", st)
	assert.Equal(t, 0, st.ExitCode)
	b, err := os.ReadFile(filepath.Join(dir, "notes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "second\n", string(b), "the keys worked")
	assert.Equal(t, "after\n", run(t, s, "echo after").Output)
}
