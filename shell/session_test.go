//go:build unix

package shell

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/sandbox"
	"github.com/subkit/subkit/subprocess"
)

// waitMarked waits until at least n processes carry mark.
func waitMarked(t *testing.T, mark string, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return len(testutil.Marked(mark)) >= n }, 30*time.Second, 5*time.Millisecond,
		"marked processes: %v", testutil.Marked(mark))
}

func markedNow(mark string) []int { return testutil.Marked(mark) }

// State stays between commands: the cwd, exported variables, functions and arrays a sourced
// activate script defines, and a failing command leaves the session working.
func TestShellStateSticks(t *testing.T) {
	s := newSession(t)
	tmp, err := filepath.EvalSymlinks(os.TempDir())
	require.NoError(t, err)

	st := run(t, s, "cd "+tmp)
	assert.Equal(t, "", st.Output)
	assert.Equal(t, tmp, st.Cwd)
	st = run(t, s, "pwd")
	assert.Equal(t, tmp+"\n", st.Output)
	assert.Equal(t, tmp, st.Cwd)
	assert.Equal(t, 0, st.ExitCode)

	run(t, s, "export X=1")
	assert.Equal(t, "1\n", run(t, s, "echo $X").Output)

	venv := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(venv, "bin"), 0o755))
	activate := `VIRTUAL_ENV="` + venv + `"; export VIRTUAL_ENV
_OLD_PATH="$PATH"; PATH="$VIRTUAL_ENV/bin:$PATH"; export PATH
declare -A VENV_INFO=([name]=demo)
deactivate () { PATH="$_OLD_PATH"; export PATH; unset VIRTUAL_ENV; unset -f deactivate; }
`
	require.NoError(t, os.WriteFile(filepath.Join(venv, "bin", "activate"), []byte(activate), 0o644))
	run(t, s, "source "+filepath.Join(venv, "bin", "activate"))
	st = run(t, s, `type -t deactivate; echo "$VIRTUAL_ENV ${VENV_INFO[name]}"; echo "${PATH%%:*}"`)
	assert.Equal(t, "function\n"+venv+" demo\n"+venv+"/bin\n", st.Output)
	run(t, s, "deactivate")
	assert.Equal(t, "none\n", run(t, s, `declare -F deactivate || echo none`).Output)

	assert.Equal(t, "bash\n", run(t, s, "echo $0").Output)
	st = run(t, s, "false")
	assert.Equal(t, 1, st.ExitCode)
	assert.Equal(t, "", st.Output)
	st = run(t, s, "echo $?; echo next")
	assert.Equal(t, "1\nnext\n", st.Output, "$? is the previous command's status, as at a prompt")
	assert.Equal(t, 0, st.ExitCode)
	assert.Equal(t, "echo $?; echo next", s.Info().Command, "Info names the last command")
}

// set -euo pipefail makes the first failure end the command, not the session, and the
// boundaries stay right through subshells, functions, pipelines, unbound variables and traces.
func TestShellStrictMode(t *testing.T) {
	s := newSession(t)
	run(t, s, "set -euo pipefail")

	st := run(t, s, "(false)")
	assert.Equal(t, 1, st.ExitCode)
	assert.NotEmpty(t, st.Notes)
	st = run(t, s, "echo a; false; echo b")
	assert.Equal(t, "a\n", st.Output)
	assert.Equal(t, 1, st.ExitCode)
	st = run(t, s, "f() { echo in-f; false; echo not-reached; }; f; echo not-reached-either")
	assert.Equal(t, "in-f\n", st.Output)
	assert.Equal(t, 1, st.ExitCode)
	st = run(t, s, "true | false | true; echo not-reached")
	assert.Equal(t, 1, st.ExitCode, "pipefail")
	assert.Equal(t, "", st.Output)
	st = run(t, s, "( exit 4 ); echo not-reached")
	assert.Equal(t, 4, st.ExitCode)
	st = run(t, s, "x=$(false; echo sub); echo \"x=$x\"; if false; then :; fi; false || echo handled")
	assert.Equal(t, "x=sub\nhandled\n", st.Output, "errexit exceptions are bash's")
	assert.Equal(t, 0, st.ExitCode)

	// A line typed at the prompt itself fails under set -e: the shell survives that too.
	st, err := s.Write(ctxT(t, time.Minute), "false\n", time.Minute)
	require.NoError(t, err)
	require.Equal(t, StateCompleted, st.State)
	assert.Equal(t, 1, st.ExitCode)

	st = run(t, s, `echo still; echo "$-"`)
	assert.True(t, strings.HasPrefix(st.Output, "still\n"), st.Output)
	assert.Contains(t, strings.TrimPrefix(st.Output, "still\n"), "e", "set -e stays on")
	assert.Contains(t, strings.TrimPrefix(st.Output, "still\n"), "u", "set -u stays on")

	run(t, s, "set -x")
	st = run(t, s, "echo traced")
	assert.Equal(t, "++ echo traced\ntraced\n", st.Output, "the trace shows the command and nothing of the session's")
	st = run(t, s, "false")
	assert.Equal(t, 1, st.ExitCode)
	run(t, s, "set +xe +o pipefail")
	st = run(t, s, "echo $NO_SUCH_VARIABLE_X; echo not-reached")
	assert.Equal(t, 1, st.ExitCode, "set -u alone: an interactive shell abandons the command")
	assert.Contains(t, st.Output, "unbound variable")
	assert.NotContains(t, st.Output, "not-reached")
	assert.Equal(t, "ok\n", run(t, s, "echo ok").Output)

	// Under set -e, bash itself exits at an expansion error: the session puts a new bash in
	// its place with the same state, and the command fails as in a script.
	tmp := t.TempDir()
	run(t, s, "cd "+tmp+"; set -e; kept=yes; declare -A m=([k]=v); fn() { echo fn-$kept; }; alias al='echo alias'; shopt -s extglob; trap 'echo user-trap' USR1")
	pid := s.Pid()
	for _, cmd := range []string{`set -euo pipefail; echo "$UNSET"; echo not-reached`, `echo ${NOPE:?gone}`, `echo ${a b}`} {
		st, err = s.Run(ctxT(t, time.Minute), cmd, time.Minute)
		require.NoError(t, err)
		require.Equal(t, StateCompleted, st.State, "%s: %+v", cmd, st)
		assert.Equal(t, 1, st.ExitCode, cmd)
		assert.Equal(t, tmp, st.Cwd)
		assert.True(t, strings.HasPrefix(st.Output, "bash: "), "bash's own message: %q", st.Output)
		assert.NotContains(t, st.Output, "not-reached")
		require.NotEmpty(t, st.Notes)
		assert.Contains(t, st.Notes[0], "started a new bash in its place")
	}
	assert.Equal(t, pid, s.Pid(), "the same process, exec'd")
	st = run(t, s, `echo "$PWD $kept ${m[k]}"; fn; al; echo $-; shopt -q extglob && echo extglob; trap -p USR1; echo x >&2`)
	assert.Equal(t, tmp+" yes v\nfn-yes\nalias\n", st.Output[:len(tmp+" yes v\nfn-yes\nalias\n")])
	assert.Contains(t, st.Output, "e", "set -e is still on")
	assert.Contains(t, st.Output, "extglob\ntrap -- 'echo user-trap' SIGUSR1\nx\n")
	st = run(t, s, "false; echo not-reached")
	assert.Equal(t, 1, st.ExitCode, "set -e still stops a command")

	// An explicit exit still ends the session.
	st, err = s.Run(ctxT(t, time.Minute), "exit 4", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, StateExited, st.State)
	assert.Equal(t, 4, st.ExitCode)
}

// A python REPL in the foreground: the state says so, input goes to it, and exit() gives
// the shell its prompt back.
func TestShellREPL(t *testing.T) {
	lookPath(t, "python3")
	s := newSession(t)
	st, err := s.Run(ctxT(t, time.Minute), "python3 -q", 100*time.Millisecond)
	require.NoError(t, err)
	_, st = pollUntil(t, s, st, func(out string, st Step) bool {
		return strings.HasPrefix(st.Foreground, "python") && strings.Contains(out, ">>> ")
	})
	// Running, or already seen waiting at its prompt when the Poll outlasted InputSettle.
	assert.Contains(t, []State{StateRunning, StateWaitingInput}, st.State)
	first, err := s.Write(ctxT(t, time.Minute), "print(6*7)\n", 100*time.Millisecond)
	require.NoError(t, err)
	_, st = pollUntil(t, s, first, func(o string, _ Step) bool { return strings.Contains(o, "42\n") })
	assert.Contains(t, []State{StateRunning, StateWaitingInput}, st.State)
	assert.True(t, strings.HasPrefix(st.Foreground, "python"), "foreground %q", st.Foreground)
	st, err = s.Write(ctxT(t, time.Minute), "exit()\n", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, StateCompleted, st.State)
	assert.Equal(t, 0, st.ExitCode)
	assert.Equal(t, "back\n", run(t, s, "echo back").Output)
}

// A command still running at the yield is reported running with its foreground command;
// Interrupt ends it and the shell's prompt comes back with status 130.
func TestShellInterrupt(t *testing.T) {
	s := newSession(t)
	st, err := s.Interrupt(ctxT(t, time.Minute), time.Second)
	require.NoError(t, err)
	assert.Equal(t, StateCompleted, st.State)
	assert.Contains(t, st.Notes, "nothing was running: no signal was sent")

	st, err = s.Run(ctxT(t, time.Minute), "sleep 100", 300*time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, StateRunning, st.State)
	assert.Equal(t, -1, st.ExitCode)
	_, st = pollUntil(t, s, st, func(_ string, st Step) bool { return st.Foreground == "sleep" })
	assert.NotZero(t, st.ForegroundPid)
	_, err = s.Run(ctxT(t, time.Minute), "echo no", time.Second)
	require.ErrorIs(t, err, ErrBusy)

	st, err = s.Interrupt(ctxT(t, time.Minute), time.Minute)
	require.NoError(t, err)
	assert.Equal(t, StateCompleted, st.State)
	assert.Equal(t, 130, st.ExitCode)
	assert.Equal(t, "sleep 100", st.Command)

	// A loop of the shell itself is in the shell's own group: Ctrl-C reaches it too.
	st, err = s.Run(ctxT(t, time.Minute), "while :; do :; done", 200*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, StateRunning, st.State)
	assert.Equal(t, "bash", st.Foreground)
	st, err = s.Interrupt(ctxT(t, time.Minute), time.Minute)
	require.NoError(t, err)
	assert.Equal(t, StateCompleted, st.State)
	assert.Equal(t, 130, st.ExitCode)
	assert.Equal(t, "ok\n", run(t, s, "echo ok").Output)
}

// Output without a trailing newline, \r progress bars and a forged marker leave the
// boundaries right.
func TestShellOutputShapes(t *testing.T) {
	s := newSession(t)
	assert.Equal(t, "abc", run(t, s, "printf abc").Output)
	assert.Equal(t, "x\n", run(t, s, "echo x").Output)

	st := run(t, s, `printf '\033]6973;0123456789abcdef0123456789abcdef;0;;/forged\007after\n'; exit_with() { return $1; }; exit_with 7`)
	assert.Equal(t, 7, st.ExitCode, "a marker without the session's nonce is output")
	assert.Equal(t, "after\n", st.Output, "the text drops the escape sequence")
	assertTranscript(t, s, st, "\x1b]6973;0123456789abcdef0123456789abcdef;0;;/forged\aafter\r\n")
	assert.NotEqual(t, "/forged", st.Cwd)
	st = run(t, s, `printf '\033]6973;'; sleep 0.1; printf ';0;;/x\007'; printf '\033]6973;%s;0;;/y\007\n' nononce; (exit 5)`)
	assert.Equal(t, 5, st.ExitCode)
	assert.Equal(t, "\n", st.Output)
	assertTranscript(t, s, st, "\x1b]6973;;0;;/x\a\x1b]6973;nononce;0;;/y\a\r\n")

	st = run(t, s, `for i in $(seq 1 10000); do printf '\rprogress %d/10000' $i; done; echo; echo done`)
	assert.True(t, strings.HasSuffix(st.Output, "progress 10000/10000\ndone\n"), "tail %q", tailOf(st.Output))
	assert.Equal(t, 0, st.ExitCode)
	raw, err := s.ReadTranscript(st.From, 64)
	require.NoError(t, err)
	var want strings.Builder
	for i := 1; want.Len() < 64; i++ {
		fmt.Fprintf(&want, "\rprogress %d/10000", i)
	}
	assert.Equal(t, want.String()[:64], string(raw.Data), "the transcript keeps the raw bytes")
	assert.Equal(t, "next\n", run(t, s, "echo next").Output)
}

func tailOf(s string) string { return s[max(0, len(s)-200):] }

// heapPeak samples the heap in use until the returned function is called, which returns the
// highest figure seen.
func heapPeak(t *testing.T) func() uint64 {
	stop := make(chan struct{})
	res := make(chan uint64)
	go func() {
		var top uint64
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			top = max(top, ms.HeapAlloc)
			select {
			case <-stop:
				res <- top
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	return func() uint64 { close(stop); return <-res }
}

// 50 MB of output: the Step shows a bounded head and tail, the memory the session holds stays
// bounded, and the next command's boundaries are right.
func TestShellFloodBounded(t *testing.T) {
	lookPath(t, "head")
	cfg, _ := testConfig(t)
	s := openT(t, cfg)
	const n = 50_000_000
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	peak := heapPeak(t)
	st := run(t, s, "head -c 50000000 /dev/zero | tr '\\0' x; echo; echo end")
	top := peak()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	t.Logf("heap: %d MiB before, %d MiB at the peak, %d MiB after", base>>20, top>>20, ms.HeapAlloc>>20)
	assert.Less(t, int64(ms.HeapAlloc)-int64(base), int64(16<<20), "the heap kept after a 50 MB flood")
	assert.Less(t, int64(top)-int64(base), int64(40<<20), "the heap's peak during a 50 MB flood")
	assert.Equal(t, 0, st.ExitCode)
	assert.LessOrEqual(t, len(st.Output), DefaultMaxOutputBytes+markLen)
	assert.True(t, strings.HasSuffix(st.Output, "x\nend\n"), "tail %q", tailOf(st.Output))
	assert.True(t, strings.HasPrefix(st.Output, "xxxx"))
	assert.Contains(t, st.Output, "bytes omitted ...]\n")
	assert.Equal(t, int64(n+len("\r\nend\r\n")), st.Next-st.From+st.Lost, "every byte is counted")
	assert.Equal(t, st.Next-st.From-int64(DefaultMaxOutputBytes), st.Omitted)

	s.mu.Lock()
	held := s.tr.ring.Len() + cap(s.tr.head)
	s.mu.Unlock()
	assert.LessOrEqual(t, held, DefaultTranscriptBytes+DefaultMaxOutputBytes, "the transcript's memory is bounded")
	s.rmu.Lock()
	assert.LessOrEqual(t, cap(s.sc.line), 2*lineMax, "the scanner's memory is bounded")
	s.rmu.Unlock()

	d, err := s.ReadTranscript(st.From, 10)
	require.NoError(t, err)
	assert.Zero(t, d.Dropped, "the transcript file holds the start of the flood")
	assert.Equal(t, "xxxxxxxxxx", string(d.Data))
	assert.Equal(t, "after\n", run(t, s, "echo after").Output)
}

// `exit 3` ends the session with status 3; nothing runs after, and an Interrupt sends nothing.
func TestShellExit(t *testing.T) {
	s := newSession(t)
	st, err := s.Run(ctxT(t, time.Minute), "echo bye; exit 3", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, StateExited, st.State)
	assert.Equal(t, 3, st.ExitCode)
	assert.Equal(t, "bye\n", st.Output)
	_, err = s.Run(ctxT(t, time.Minute), "echo no", time.Second)
	require.ErrorIs(t, err, ErrExited)
	_, err = s.Write(ctxT(t, time.Minute), "x\n", time.Second)
	require.ErrorIs(t, err, ErrExited)
	st, err = s.Interrupt(ctxT(t, time.Minute), time.Second)
	require.NoError(t, err)
	assert.Equal(t, StateExited, st.State)
	assert.Equal(t, 3, st.ExitCode)
	assert.Equal(t, StateExited, s.Info().State)
	assert.Equal(t, 3, s.Info().ExitCode)
	<-s.term.Done() // the Step came as the shell said it exits; the output ends after
	d, err := s.ReadTranscript(0, 0)
	require.NoError(t, err)
	assert.True(t, d.Done)
}

// A shell killed from outside is reported exited by its signal.
func TestShellKilled(t *testing.T) {
	s := newSession(t)
	st, err := s.Run(ctxT(t, time.Minute), "kill -KILL $$", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, StateExited, st.State)
	assert.Equal(t, -1, st.ExitCode)
	assert.Equal(t, "SIGKILL", st.Signal)
}

// A builtin waiting for input holds the foreground as the shell; Write answers it, and the
// terminal echoes what was typed, as it would for a person.
func TestShellReadInput(t *testing.T) {
	s := newSession(t)
	st, err := s.Run(ctxT(t, time.Minute), "read -r x; echo got:$x", waitYield)
	require.NoError(t, err)
	require.Equal(t, waitingState, st.State)
	assert.Equal(t, "bash", st.Foreground)
	st, err = s.Write(ctxT(t, time.Minute), "hello there\n", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, StateCompleted, st.State)
	assert.Equal(t, "hello there\ngot:hello there\n", st.Output)
	assert.Equal(t, "read -r x; echo got:$x", st.Command)
}

// Close while a call waits: the call returns ErrClosed, and every later call too.
func TestShellCloseDuringRun(t *testing.T) {
	cfg, _ := testConfig(t)
	s, err := Open(ctxT(t, time.Minute), cfg)
	require.NoError(t, err)
	done := make(chan error, 1)
	sig := testutil.NewSignals(t)
	go func() {
		_, err := s.Run(ctxT(t, time.Minute), "echo > "+sig.Path+"; sleep 1000", 10*time.Minute)
		done <- err
	}()
	sig.Next(t) // the command runs: Close while Run waits for it
	require.NoError(t, s.Close())
	require.ErrorIs(t, <-done, ErrClosed)
	_, err = s.Run(ctxT(t, time.Minute), "true", 0)
	assert.ErrorIs(t, err, ErrClosed)
	_, err = s.Poll(ctxT(t, time.Minute), 0)
	assert.ErrorIs(t, err, ErrClosed)
	_, err = s.ReadTranscript(0, 0)
	assert.ErrorIs(t, err, ErrClosed)
	require.NoError(t, s.Close())
}

// A syntax error is found before anything runs.
func TestShellSyntaxError(t *testing.T) {
	s := newSession(t)
	before := run(t, s, "echo start").Next
	for _, cmd := range []string{"echo )", "if true; then echo x", "echo 'unclosed", "fi"} {
		_, err := s.Run(ctxT(t, time.Minute), cmd, time.Second)
		require.ErrorIs(t, err, ErrSyntax, cmd)
		var se *SyntaxError
		require.ErrorAs(t, err, &se)
		assert.True(t, strings.HasPrefix(se.Message, "bash: line "), "%s: %s", cmd, se.Message)
	}
	st := run(t, s, "echo fine")
	assert.Equal(t, "fine\n", st.Output)
	assert.Equal(t, before, st.From, "nothing ran in between")
	st = run(t, s, "shopt -s extglob\nx=abc; echo ${x/@(a|b)/-}")
	assert.Equal(t, "-bc\n", st.Output, "extended patterns pass the check")
}

// Changing PS1 or PROMPT_COMMAND is repaired and reported; a line written at the prompt runs.
func TestShellPromptChanges(t *testing.T) {
	s := newSession(t)
	st := run(t, s, "PS1='my prompt> '; PS0='zero'")
	assert.Contains(t, st.Notes, "PS1, PS2 and PS0 were cleared again: the session shows no prompt text")
	assert.Equal(t, "x\n", run(t, s, "echo x").Output)

	st = run(t, s, "PROMPT_COMMAND='echo hook'")
	require.Len(t, st.Notes, 1)
	assert.Contains(t, st.Notes[0], "replaced PROMPT_COMMAND")
	st = run(t, s, "echo y")
	assert.Equal(t, 0, st.ExitCode)
	assert.Contains(t, st.Output, "y\n")
	run(t, s, "unset PROMPT_COMMAND")
	st = run(t, s, "(exit 6)")
	assert.Equal(t, 6, st.ExitCode)

	st, err := s.Write(ctxT(t, time.Minute), "echo typed; (exit 2)\n", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, StateCompleted, st.State)
	assert.Equal(t, "echo typed; (exit 2)\ntyped\n", st.Output, "the terminal echoes the line, as for a person")
	assert.Equal(t, 2, st.ExitCode)

	// Lines written at the prompt print markers of their own: a late one never ends a later
	// command.
	st, err = s.Write(ctxT(t, time.Minute), "echo a\nsleep 0.2; echo b\n", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, "echo a\nsleep 0.2; echo b\na\n", st.Output)
	st = run(t, s, "echo c")
	assert.Equal(t, "b\nc\n", st.Output)

	// Half a line written to the prompt does not spoil the next command.
	_, err = s.Write(ctxT(t, time.Minute), "echo half", time.Millisecond)
	require.NoError(t, err)
	assert.Equal(t, "whole\n", run(t, s, "echo whole").Output)

	// A command that sends its stdout away still gets its boundary.
	st = run(t, s, "exec 3>&1 >/dev/null; echo hidden; exec >&3 3>&-; echo shown")
	assert.Equal(t, "shown\n", st.Output)
}

// A session works on a caller's guarded Service and never closes it.
func TestShellCallerServiceGuarded(t *testing.T) {
	cfg, mark := testConfig(t)
	sc := cfg.ServiceConfig
	sc.Guard = true
	svc, err := subprocess.New(sc)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, svc.Close()) })
	_, err = Open(ctxT(t, time.Minute), Config{Service: svc, ServiceConfig: sc})
	require.ErrorIs(t, err, ErrInvalid, "ServiceConfig with a Service is a mistake")

	s, err := Open(ctxT(t, time.Minute), Config{Service: svc})
	require.NoError(t, err)
	assert.Equal(t, "on\n", run(t, s, "[ -n \"$SUBKIT_TEST_MARK\" ] && echo on").Output)
	run(t, s, "setsid sleep 1000 & sleep 1001 &")
	waitMarked(t, mark, 3)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "closing twice is fine")
	assert.Empty(t, markedNow(mark), "the session's processes are gone")

	h, err := svc.Spawn(ctxT(t, time.Minute), subprocess.Spec{Path: "true"})
	require.NoError(t, err, "the caller's Service is still open")
	_, err = h.Wait(ctxT(t, time.Minute))
	require.NoError(t, err)
	require.NoError(t, h.Close())
}

// A session on a sandboxed Service is confined like every tree of that Service, and its
// boundaries, foreground and Interrupt work as ever.
func TestShellSandboxed(t *testing.T) {
	cfg, _ := testConfig(t)
	cfg.ServiceConfig.Sandbox = &sandbox.Policy{Writable: []string{t.TempDir()}}
	s, err := Open(ctxT(t, time.Minute), cfg)
	if errors.Is(err, ErrUnsupported) {
		t.Skipf("no sandbox here: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	assert.Equal(t, "/tmp\n", run(t, s, "cd /tmp; pwd").Output)
	st := run(t, s, "touch /etc/subkit-shell-test")
	assert.Equal(t, 1, st.ExitCode, "outside the writable roots: %q", st.Output)
	st, err = s.Run(ctxT(t, time.Minute), "sleep 100", 200*time.Millisecond)
	require.NoError(t, err)
	_, st = pollUntil(t, s, st, func(_ string, st Step) bool { return st.Foreground == "sleep" })
	st, err = s.Interrupt(ctxT(t, time.Minute), time.Minute)
	require.NoError(t, err)
	assert.Equal(t, StateCompleted, st.State)
	assert.Equal(t, 130, st.ExitCode)

	// A confined program waiting at a password prompt is seen as one.
	st, err = s.Run(ctxT(t, time.Minute), `read -rs -p "Password: " x`, waitYield)
	require.NoError(t, err)
	require.Equal(t, waitingState, st.State)
	if st.Input != nil {
		assert.True(t, st.Input.EchoOff)
		assert.Equal(t, "Password: ", st.Input.Prompt)
	}
}

// Every process a closed session started is gone: a job, a nohup'd one, a setsid child and a
// double fork.
func TestShellCloseEndsEverything(t *testing.T) {
	for _, guard := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "guarded"}[guard], func(t *testing.T) {
			cfg, mark := testConfig(t)
			cfg.ServiceConfig.Guard = guard
			s, err := Open(ctxT(t, time.Minute), cfg)
			require.NoError(t, err)
			run(t, s, "sleep 1000 &")
			run(t, s, "nohup sleep 1000 >/dev/null 2>&1 &")
			run(t, s, "setsid sleep 1000 &")
			run(t, s, "(sleep 1000 &)")
			_, err = s.Run(ctxT(t, time.Minute), "sleep 1000", 100*time.Millisecond)
			require.NoError(t, err)
			waitMarked(t, mark, 6) // the shell and five sleeps
			require.NoError(t, s.Close())
			assert.Empty(t, markedNow(mark), "processes left after Close")
		})
	}
}

// Bad input gets typed errors, never a panic.
func TestShellBadInput(t *testing.T) {
	var zero Session
	var nilS *Session
	ctx := ctxT(t, time.Minute)
	for _, s := range []*Session{&zero, nilS} {
		_, err := s.Run(ctx, "true", 0)
		assert.ErrorIs(t, err, ErrInvalid)
		_, err = s.Write(ctx, "x", 0)
		assert.ErrorIs(t, err, ErrInvalid)
		_, err = s.Poll(ctx, 0)
		assert.ErrorIs(t, err, ErrInvalid)
		_, err = s.Interrupt(ctx, 0)
		assert.ErrorIs(t, err, ErrInvalid)
		_, err = s.ReadTranscript(0, 0)
		assert.ErrorIs(t, err, ErrInvalid)
		assert.ErrorIs(t, s.Close(), ErrInvalid)
		assert.Equal(t, Info{}, s.Info())
		assert.Equal(t, 0, s.Pid())
	}
	var nilCtx context.Context
	_, err := Open(nilCtx, Config{})
	assert.ErrorIs(t, err, ErrInvalid)
	for _, c := range []Config{
		{MaxOutputBytes: -1}, {MaxOutputBytes: 1 << 40}, {Yield: -time.Second}, {Yield: time.Hour},
		{Cols: 70000}, {TranscriptBytes: 100, MaxOutputBytes: 1000}, {MaxOutputBytes: 10},
		{Env: []string{"NOEQUALS"}}, {Env: []string{"=x"}}, {Bash: "a\x00b"}, {Grace: -1},
	} {
		err := c.Validate()
		var ce *ConfigError
		assert.ErrorAs(t, err, &ce, "%+v", c)
		assert.ErrorIs(t, err, ErrInvalid)
	}
	cfg, _ := testConfig(t)
	cfg.Bash = "no-such-shell-xyz"
	_, err = Open(ctx, cfg)
	assert.ErrorIs(t, err, ErrNotFound)

	s := newSession(t)
	_, err = s.Run(nilCtx, "true", 0)
	assert.ErrorIs(t, err, ErrInvalid)
	_, err = s.Write(nilCtx, "x", 0)
	assert.ErrorIs(t, err, ErrInvalid)
	_, err = s.Poll(nilCtx, 0)
	assert.ErrorIs(t, err, ErrInvalid)
	_, err = s.Interrupt(nilCtx, 0)
	assert.ErrorIs(t, err, ErrInvalid)
	for _, c := range []string{"", "  \n", "a\x00b", strings.Repeat("x", MaxCommandBytes+1)} {
		_, err = s.Run(ctx, c, 0)
		assert.ErrorIs(t, err, ErrInvalid)
	}
	_, err = s.Run(ctx, "true", -time.Second)
	assert.ErrorIs(t, err, ErrInvalid)
	_, err = s.Run(ctx, "true", time.Duration(1<<62))
	assert.ErrorIs(t, err, ErrInvalid)
	_, err = s.Write(ctx, strings.Repeat("x", MaxInputBytes+1), 0)
	assert.ErrorIs(t, err, ErrInvalid)
	_, err = s.ReadTranscript(-1, 0)
	assert.ErrorIs(t, err, ErrInvalid)
	_, err = s.ReadTranscript(1<<50, 0)
	assert.ErrorIs(t, err, ErrInvalid)
	_, err = s.ReadTranscript(0, -1)
	assert.ErrorIs(t, err, ErrInvalid)
	done, cancel := context.WithCancel(ctx)
	cancel()
	_, err = s.Run(done, "true", 0)
	assert.True(t, errors.Is(err, context.Canceled), "%v", err)
	assert.Equal(t, "ok\n", run(t, s, "echo ok").Output)
}

// The transcript is read by offset, before and after Steps, with the session keeping no cursor.
func TestShellReadTranscript(t *testing.T) {
	s := newSession(t)
	a := run(t, s, "echo one")
	b := run(t, s, "echo two")
	assert.Equal(t, a.Next, b.From)
	d, err := s.ReadTranscript(a.From, 0)
	require.NoError(t, err)
	assert.Equal(t, "one\r\ntwo\r\n", string(d.Data))
	assert.Equal(t, b.Next, d.Next)
	assert.False(t, d.Done)
	d, err = s.ReadTranscript(a.From, 3)
	require.NoError(t, err)
	assert.Equal(t, "one", string(d.Data))
	assert.Equal(t, "one\ntwo\n", Render([]byte("one\r\ntwo\r\n")))
}

// Only the session's own lines leave the output: every line of declare -f, the value of
// PROMPT_COMMAND and env's copy of it stay; a syntax error bash -n lets through (a pattern of
// extglob, which is off) shows bash's own message.
func TestShellKeepsUserLines(t *testing.T) {
	s := newSession(t)
	st := run(t, s, "declare -f | wc -l")
	n := strings.TrimSpace(st.Output)
	st = run(t, s, "declare -f")
	assert.Equal(t, n, fmt.Sprint(strings.Count(st.Output, "\n")), "every line of declare -f")
	assert.Contains(t, st.Output, "__sk_"+s.nonce+"_p")
	st = run(t, s, "echo $PROMPT_COMMAND")
	assert.Equal(t, promptCommand(s.nonce, filepath.Join(s.dir, "rc"))+"\n", st.Output)
	st = run(t, s, "env | grep -c '^PROMPT_COMMAND='")
	assert.Equal(t, "1\n", st.Output)

	run(t, s, "shopt -u extglob")
	st = run(t, s, "ls !(x)")
	assert.Equal(t, 2, st.ExitCode)
	assert.Equal(t, "bash: line 1: syntax error near unexpected token `('\nbash: line 1: `ls !(x)'\n", st.Output)

	run(t, s, "set -xv")
	st = run(t, s, "echo traced")
	assert.Equal(t, "echo traced\n++ echo traced\ntraced\n", st.Output, "the command's own lines of set -v and set -x only")
	run(t, s, "set +xv")
	assert.Equal(t, "x\n", run(t, s, "echo x").Output)
}

// No output is out of reach: the middle a Step leaves out is read back by offset, from memory
// or, for what memory no longer holds, from the transcript file, whose length is bounded.
func TestShellTranscriptFile(t *testing.T) {
	cfg, _ := testConfig(t)
	cfg.TranscriptBytes = DefaultMaxOutputBytes
	cfg.TranscriptFileBytes = 250_000
	s := openT(t, cfg)
	path := s.TranscriptPath()
	require.NotEmpty(t, path)
	st := run(t, s, `for i in $(seq 1 20000); do echo "line $i"; done; echo "ERROR: the one line"; for i in $(seq 20001 30000); do echo "line $i"; done`)
	require.Positive(t, st.Omitted)
	assert.NotContains(t, st.Output, "ERROR")
	d, err := s.ReadTranscript(st.OmittedFrom, int(st.Omitted))
	require.NoError(t, err)
	assert.Zero(t, d.Dropped, "the file holds what memory dropped")
	assert.Equal(t, st.OmittedFrom, d.From)
	assert.True(t, strings.Contains(string(d.Data), "ERROR: the one line\r\n"), "the omitted middle, read back")
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, int64(250_000), info.Size(), "bounded")
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())

	// Past the file's bound and before memory's: dropped, and said so.
	d, err = s.ReadTranscript(255_000, 100)
	require.NoError(t, err)
	assert.Positive(t, d.Dropped)

	require.NoError(t, s.Close())
	_, err = os.Stat(path)
	assert.True(t, os.IsNotExist(err), "Close removes it")
}

// A host without a locale gets a UTF-8 one; git's editors fail with a message saying what to
// do instead of waiting or succeeding without doing what was asked.
func TestShellLocaleAndEditor(t *testing.T) {
	cfg, _ := testConfig(t)
	var env []string
	for _, kv := range cfg.ServiceConfig.Env {
		if !strings.HasPrefix(kv, "LANG=") && !strings.HasPrefix(kv, "LC_") {
			env = append(env, kv)
		}
	}
	cfg.ServiceConfig.Env = env
	s := openT(t, cfg)
	dir := t.TempDir()
	st := run(t, s, "cd "+dir+" && touch résumé_文件.txt && ls && echo $LANG")
	assert.Equal(t, "résumé_文件.txt\nC.UTF-8\n", st.Output)

	lookPath(t, "git")
	run(t, s, "export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@example.com GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@example.com")
	run(t, s, "git init -q r && cd r && git commit -q --allow-empty -m one && git commit -q --allow-empty -m two")
	for _, cmd := range []string{"git rebase -i HEAD~1", "git commit --allow-empty"} {
		st = run(t, s, cmd)
		assert.NotEqual(t, 0, st.ExitCode, cmd)
		assert.Contains(t, st.Output, "subkit: no interactive editor in this session", cmd)
		assert.Contains(t, st.Output, "git commit -m MSG", cmd)
	}
	assert.Equal(t, "two\none\n", run(t, s, "git log --format=%s").Output, "nothing was rewritten")
}

// exit ends the session at once though a background job still holds the terminal: the shell
// says it exits, so the Step need not wait for the terminal to drain (Config.Grace, here
// longer than the yield, so a Step that waited would say running).
func TestShellExitWithBackgroundJob(t *testing.T) {
	cfg, mark := testConfig(t)
	cfg.Grace = 10 * time.Minute
	cfg.MaxYield = time.Hour
	s := openT(t, cfg)
	run(t, s, "sleep 1000 &")
	waitMarked(t, mark, 2)
	st, err := s.Run(ctxT(t, 2*time.Minute), "exit 2", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, StateExited, st.State)
	assert.Equal(t, 2, st.ExitCode)
	_, err = s.Run(ctxT(t, time.Minute), "echo no", time.Second)
	require.ErrorIs(t, err, ErrExited)
	assert.Equal(t, StateExited, s.Info().State)
	require.NoError(t, s.Close())
	assert.Empty(t, markedNow(mark), "Close ends the job")
}

// A foreground program that ignores Ctrl-C and SIGTERM is ended by TerminateForeground (TERM,
// the grace, KILL), and the shell stays; the shell's own loop gets Ctrl-C only.
func TestShellTerminateForeground(t *testing.T) {
	cfg, _ := testConfig(t)
	cfg.Grace = 300 * time.Millisecond
	s := openT(t, cfg)
	st, err := s.TerminateForeground(ctxT(t, time.Minute), time.Minute)
	require.NoError(t, err)
	assert.Contains(t, st.Notes, "nothing was running: no signal was sent")

	run(t, s, "cd /tmp")
	st, err = s.Run(ctxT(t, time.Minute), `bash -c 'trap "" INT TERM; sleep 1000'`, 100*time.Millisecond)
	require.NoError(t, err)
	// Once the foreground is the sleep, bash -c has set its traps (the sleep inherits them).
	_, st = pollUntil(t, s, st, func(_ string, st Step) bool { return st.Foreground == "sleep" })
	st, err = s.Interrupt(ctxT(t, time.Minute), 300*time.Millisecond)
	require.NoError(t, err)
	require.Equal(t, StateRunning, st.State, "Ctrl-C is ignored")
	st, err = s.TerminateForeground(ctxT(t, time.Minute), time.Minute)
	require.NoError(t, err)
	assert.Equal(t, StateCompleted, st.State)
	assert.Equal(t, 128+9, st.ExitCode)
	require.NotEmpty(t, st.Notes)
	assert.Contains(t, st.Notes[len(st.Notes)-1], "SIGKILL was sent")
	assert.Equal(t, "/tmp", st.Cwd)
	assert.Equal(t, "ok\n", run(t, s, "echo ok").Output, "the shell stays")

	st, err = s.Run(ctxT(t, time.Minute), "sleep 1000", 100*time.Millisecond)
	require.NoError(t, err)
	st, err = s.TerminateForeground(ctxT(t, time.Minute), time.Minute)
	require.NoError(t, err)
	assert.Equal(t, 128+15, st.ExitCode, "SIGTERM was enough")

	st, err = s.Run(ctxT(t, time.Minute), "while :; do :; done", 100*time.Millisecond)
	require.NoError(t, err)
	st, err = s.TerminateForeground(ctxT(t, time.Minute), time.Minute)
	require.NoError(t, err)
	assert.Equal(t, 130, st.ExitCode)
	assert.Contains(t, st.Notes[len(st.Notes)-1], "Ctrl-C (SIGINT), never SIGTERM or SIGKILL")
	assert.Equal(t, "ok\n", run(t, s, "echo ok").Output)
}

// Every closed error says subprocess.ErrClosed too, and Open on a caller's Service that was
// closed says so before it looks at the Service's runtime root (which Close removed).
func TestShellClosedIsServiceClosed(t *testing.T) {
	assert.ErrorIs(t, ErrClosed, subprocess.ErrClosed)
	assert.NotErrorIs(t, subprocess.ErrClosed, ErrClosed, "the Service's closing is not the session's")

	cfg, _ := testConfig(t)
	svc, err := subprocess.New(cfg.ServiceConfig)
	require.NoError(t, err)
	s, err := Open(ctxT(t, time.Minute), Config{Service: svc})
	require.NoError(t, err)
	require.NoError(t, s.Close())
	_, err = s.Run(ctxT(t, time.Minute), "true", time.Second)
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, err, subprocess.ErrClosed)

	m, err := NewManager(ManagerConfig{Session: Config{Service: svc}})
	require.NoError(t, err)
	require.NoError(t, m.Close())
	_, err = m.Open(ctxT(t, time.Minute))
	require.ErrorIs(t, err, subprocess.ErrClosed)

	require.NoError(t, svc.Close())
	_, err = Open(ctxT(t, time.Minute), Config{Service: svc})
	require.ErrorIs(t, err, ErrClosed)
	require.ErrorIs(t, err, subprocess.ErrClosed)
	assert.NotContains(t, err.Error(), "no such file")
	assert.NotContains(t, err.Error(), "writable")
	assert.Contains(t, err.Error(), "Config.Service was closed")
}

// On a caller's Service, whose environment keeps the host's bash startup variables, the
// shell gets them set empty: no option from BASHOPTS or SHELLOPTS, no BASH_ENV, in the shell
// and in the bash it starts.
func TestShellCallerServiceStartupVars(t *testing.T) {
	cfg, _ := testConfig(t)
	sc := cfg.ServiceConfig
	sc.Env = append(sc.Env, "BASHOPTS=globstar", "SHELLOPTS=xtrace", "BASH_ENV=/nonexistent/rc")
	svc, err := subprocess.New(sc)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, svc.Close()) })
	s := openT(t, Config{Service: svc})
	st := run(t, s, `shopt -q globstar && echo globstar; echo "[$BASH_ENV]"; bash -c 'shopt -q globstar && echo child globstar; [[ $- == *x* ]] && echo child xtrace; echo child'`)
	assert.Equal(t, "[]\nchild\n", st.Output)
}

// assertTranscript checks that the transcript holds want as st's output, raw.
func assertTranscript(t *testing.T, s *Session, st Step, want string) {
	t.Helper()
	d, err := s.ReadTranscript(st.From, 0)
	require.NoError(t, err)
	assert.Equal(t, want, string(d.Data[:min(len(d.Data), int(st.Next-st.From))]), "the transcript keeps the marker as output")
}

// A DEBUG trap the model sets fires for its own commands only, never for the session's
// wrappers (the typed line, PROMPT_COMMAND, the session's functions), as in a bash where the
// model typed the commands at the prompt, and trap -p shows it as it was given.
func TestShellDebugTrapSeesOnlyUserCommands(t *testing.T) {
	s := newSession(t)
	st := run(t, s, `trap 'echo "DBG:$BASH_COMMAND"' DEBUG`)
	assert.Equal(t, "", st.Output, "nothing fires after the command that sets it")
	st = run(t, s, "echo hi")
	assert.Equal(t, "DBG:echo hi\nhi\n", st.Output)
	st = run(t, s, "trap -p DEBUG")
	assert.Equal(t, "DBG:trap -p DEBUG\ntrap -- 'echo \"DBG:$BASH_COMMAND\"' DEBUG\n", st.Output, "shown as given")
	st = run(t, s, "f() { echo in-f; }; f")
	assert.Equal(t, "DBG:f\nin-f\n", st.Output, "not inside functions, without functrace")
	assert.NotContains(t, run(t, s, "cd /tmp").Output, "__sk_")
	st, err := s.Run(ctxT(t, time.Minute), "false", time.Minute)
	require.NoError(t, err)
	assert.Equal(t, 1, st.ExitCode)
	assert.Equal(t, "DBG:false\nDBG:false\n", st.Output, "twice, as bash does with an ERR trap")
	st = run(t, s, `trap 'echo "st=$?"' DEBUG; false; true; trap - DEBUG`)
	assert.Equal(t, "DBG:trap 'echo \"st=$?\"' DEBUG\nst=0\nst=1\nst=1\nst=0\n", st.Output, "the action sees the status of the command before")
	st = run(t, s, `trap 'echo "st=$?"' DEBUG; set -e; false || true; set +e; trap - DEBUG`)
	assert.Equal(t, "st=0\nst=0\nst=1\nst=0\nst=0\n", st.Output, "set -e: a status restored for the action does not end the shell")
	run(t, s, `trap 'echo "DBG:$BASH_COMMAND"' DEBUG`)
	st = run(t, s, "trap - DEBUG; echo off")
	assert.Equal(t, "DBG:trap - DEBUG\noff\n", st.Output)
	assert.Equal(t, "x\n", run(t, s, "echo x").Output)
	assert.Equal(t, "", run(t, s, "trap -p DEBUG").Output)

	run(t, s, "set -T")
	run(t, s, `trap 'echo "DBG:$BASH_COMMAND"' DEBUG`)
	st = run(t, s, "g() { echo in-g; }; g")
	assert.Equal(t, "DBG:g\nDBG:g\nDBG:echo in-g\nin-g\n", st.Output, "functrace on: into the model's functions, as in bash")
	st = run(t, s, `trap 'echo T' DEBUG USR1; trap -p USR1; trap - DEBUG USR1`)
	assert.Equal(t, "DBG:trap 'echo T' DEBUG USR1\nT\ntrap -- 'echo T' SIGUSR1\nT\n", st.Output, "other signals of the same call get the action as given")
	assert.Equal(t, "y\n", run(t, s, "echo y").Output)

	// The shell the session puts in place of one that set -u ended keeps the trap as given.
	run(t, s, "set +T")
	run(t, s, `trap 'echo "DBG:$BASH_COMMAND"' DEBUG`)
	st, err = s.Run(ctxT(t, time.Minute), `set -eu; echo "$NOPE"`, time.Minute)
	require.NoError(t, err)
	require.Equal(t, StateCompleted, st.State, "%+v", st)
	st = run(t, s, "trap -p DEBUG; set +eu")
	assert.Equal(t, "DBG:trap -p DEBUG\ntrap -- 'echo \"DBG:$BASH_COMMAND\"' DEBUG\nDBG:set +eu\n", st.Output)
	assert.Equal(t, "DBG:echo z\nz\n", run(t, s, "echo z").Output)
}
