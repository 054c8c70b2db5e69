package subprocess_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/procinspect"
	"github.com/subkit/subkit/subprocess"
)

func interactiveBash(t *testing.T, svc *subprocess.Service) *subprocess.Handle {
	t.Helper()
	term, err := svc.Spawn(context.Background(), subprocess.Spec{
		Path: "bash", Args: []string{"--norc", "--noprofile", "-i"},
		Env:   []string{"PS1=$ ", "TERM=dumb"},
		Grace: 500 * time.Millisecond,
		TTY:   &subprocess.TTY{},
	})
	require.NoError(t, err)
	t.Cleanup(func() { term.Close() })
	return term
}

// screenWait follows the terminal's output (WaitOutput of Stdout) until it contains text.
func screenWait(t *testing.T, term *subprocess.Handle, text string) string {
	t.Helper()
	ctx := ctxT(t, 10*time.Second)
	var screen strings.Builder
	for next := int64(0); !strings.Contains(screen.String(), text); {
		d, err := term.WaitOutput(ctx, subprocess.Stdout, next, 0)
		require.NoError(t, err, "waiting for %q; screen: %q", text, screen.String())
		screen.Write(d.Data)
		next = d.Next
		require.False(t, d.Done && !strings.Contains(screen.String(), text), "output ended before %q; screen: %q", text, screen.String())
	}
	return screen.String()
}

func TestTerminalForegroundInterrupt(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	term := interactiveBash(t, svc)
	_, err := term.Write([]byte("sleep 1000\n"))
	require.NoError(t, err)

	var fg subprocess.Foreground
	require.Eventually(t, func() bool {
		fg, err = term.Foreground(context.Background())
		require.NoError(t, err)
		return len(fg.Procs) == 1 && fg.Procs[0].Comm == "sleep"
	}, 10*time.Second, 5*time.Millisecond, "sleep never became the foreground group: %+v", fg)
	assert.NotEqual(t, term.Pid(), fg.Pgid, "the job has a group of its own")
	assert.Equal(t, fg.Pgid, fg.Procs[0].Pid)
	assert.Equal(t, term.Pid(), fg.Procs[0].PPid)

	require.NoError(t, term.SignalForeground(context.Background(), syscall.SIGINT))
	require.Eventually(t, func() bool {
		fg, err = term.Foreground(context.Background())
		require.NoError(t, err)
		return fg.Pgid == term.Pid()
	}, 10*time.Second, 5*time.Millisecond, "the shell never got the terminal back")
	_, err = term.Write([]byte("echo alive-$((40+2))\n"))
	require.NoError(t, err)
	screenWait(t, term, "alive-42")
	select {
	case <-term.Done():
		t.Fatal("the shell died of the interrupt")
	default:
	}
	require.NoError(t, term.Terminate(ctxT(t, 20*time.Second)))
	res, err := term.Wait(ctxT(t, 5*time.Second))
	require.NoError(t, err)
	assert.Equal(t, "SIGHUP", res.Signal)
}

func TestTerminalTerminateLeavesNothing(t *testing.T) {
	svc, mark := newServiceMark(t, subprocess.Config{})
	term := interactiveBash(t, svc)
	_, err := term.Write([]byte("sleep 1001 & nohup sleep 1002 >/dev/null 2>&1 & setsid sleep 1003 & (setsid sleep 1004 &); (trap '' HUP TERM; exec sleep 1005) & echo started\n"))
	require.NoError(t, err)
	screenWait(t, term, "started")
	// The shell and five sleeps (one ignoring SIGHUP and SIGTERM), all exec'd.
	require.Eventually(t, func() bool {
		sleeps := 0
		for _, pid := range testutil.Marked(mark) {
			if p, err := procinspect.Lookup(context.Background(), pid); err == nil && p.Comm == "sleep" {
				sleeps++
			}
		}
		return sleeps == 5
	}, 10*time.Second, 5*time.Millisecond)
	begin := time.Now()
	// Inspect once, as a harness would, then end everything.
	_, err = term.Foreground(context.Background())
	require.NoError(t, err)
	require.NoError(t, term.Terminate(ctxT(t, 30*time.Second)))
	assert.Empty(t, testutil.Marked(mark), "nothing the terminal started is left")
	assert.GreaterOrEqual(t, time.Since(begin), 500*time.Millisecond, "the TERM-ignoring sleep needed SIGKILL after the grace")
	require.NoError(t, term.Terminate(ctxT(t, time.Second)), "a second Terminate is a no-op")
}

func TestTerminalUTF8OneByteAtATime(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	term, err := svc.Spawn(context.Background(), subprocess.Spec{
		Path: "bash", Args: []string{"-c", `for b in '\360' '\237' '\230' '\200'; do printf "$b"; sleep 0.05; done; printf 'end\n'`},
		TTY: &subprocess.TTY{},
	})
	require.NoError(t, err)
	defer term.Close()
	ctx := ctxT(t, 30*time.Second)
	for {
		updated := term.Updated(subprocess.Stdout) // before the read, so no arrival is missed
		d, err := term.ReadOutput(subprocess.Stdout, 0, 0)
		require.NoError(t, err)
		require.True(t, utf8.Valid(d.Data))
		require.NotContains(t, string(d.Data), "\uFFFD", "a partial character was replaced")
		if d.Done {
			break
		}
		select {
		case <-updated: // each byte comes on its own
		case <-ctx.Done():
			t.Fatalf("the output never ended: %q", d.Data)
		}
	}
	d, err := term.ReadOutput(subprocess.Stdout, 0, 0)
	require.NoError(t, err)
	assert.Equal(t, "😀end\r\n", string(d.Data))
	assert.True(t, d.Done, "EIO after the program exits ends the stream without an error")
	res, err := term.Wait(ctxT(t, 5*time.Second))
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode)
}

func TestTerminalResizeAndClose(t *testing.T) {
	svc, mark := newServiceMark(t, subprocess.Config{})
	term := interactiveBash(t, svc)
	require.NoError(t, term.Resize(100, 40))
	_, err := term.Write([]byte("stty size; sleep 1000 & echo bg\n"))
	require.NoError(t, err)
	screenWait(t, term, "40 100")
	screenWait(t, term, "bg")
	assert.ErrorIs(t, term.Resize(0, 10), subprocess.ErrInvalid)
	require.NoError(t, svc.Close(), "Close ends live terminals")
	assert.Empty(t, testutil.Marked(mark))
	require.NoError(t, term.Close())
}

func TestTerminalSpecErrors(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	ctx := context.Background()
	_, err := svc.Spawn(ctx, subprocess.Spec{TTY: &subprocess.TTY{}})
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	_, err = svc.Spawn(ctx, subprocess.Spec{Path: "bash", TTY: &subprocess.TTY{Cols: -1}})
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	_, err = svc.Spawn(ctx, subprocess.Spec{Path: "bash", TTY: &subprocess.TTY{TailBytes: subprocess.MaxTailBytes + 1}})
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	_, err = svc.Spawn(ctx, subprocess.Spec{Path: "no-such-shell", TTY: &subprocess.TTY{}})
	assert.ErrorIs(t, err, subprocess.ErrNotFound)
	// The terminal is the program's stdio: a Spec that also says how to wire stdio is refused.
	for name, spec := range map[string]subprocess.Spec{
		"Stdin":  {Stdin: subprocess.Input{Kind: subprocess.InputPipe}},
		"Stdout": {Stdout: subprocess.Output{Disposition: subprocess.Pipe}},
		"Stderr": {Stderr: subprocess.Output{TailBytes: 10}},
	} {
		spec.Path, spec.TTY = "bash", &subprocess.TTY{}
		_, err = svc.Spawn(ctx, spec)
		assert.ErrorIs(t, err, subprocess.ErrInvalid, name)
		assert.ErrorContains(t, err, name, name)
	}
}

// The terminal methods of a Handle without a terminal say so, and nothing else changes for it.
func TestTerminalMethodsNeedATerminal(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	h, err := svc.Spawn(context.Background(), subprocess.Spec{Path: "true"})
	require.NoError(t, err)
	defer h.Close()
	ctx := ctxT(t, 10*time.Second)
	_, err = h.Write([]byte("x"))
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	assert.ErrorIs(t, h.Resize(80, 24), subprocess.ErrInvalid)
	_, err = h.Foreground(ctx)
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	assert.ErrorIs(t, h.SignalForeground(ctx, syscall.SIGINT), subprocess.ErrInvalid)
	assert.Equal(t, procinspect.Identity{Pid: h.Pid()}, h.Identity())
	assert.Nil(t, h.Sandbox())
	_, err = h.Wait(ctx)
	require.NoError(t, err)
}

// A terminal's Result is the common one: its output is the Stdout stream, and its identity
// is exact.
func TestTerminalResult(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	term, err := svc.Spawn(context.Background(), subprocess.Spec{
		Path: "bash", Args: []string{"-c", "printf 'hé\\n'; exit 3"}, TTY: &subprocess.TTY{Cols: 120, Rows: 50},
	})
	require.NoError(t, err)
	defer term.Close()
	id := term.Identity()
	assert.Equal(t, term.Pid(), id.Pid)
	assert.NotZero(t, id.Start, "a terminal records the program's start")
	assert.Nil(t, term.Stdin(), "input is typed with Write")
	assert.Nil(t, term.Stdout(), "output is read with ReadOutput")
	res, err := term.Wait(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, 3, res.ExitCode)
	assert.Equal(t, term.Pid(), res.Pid)
	assert.Equal(t, "hé\r\n", string(res.Stdout.Tail))
	assert.Empty(t, res.Stderr.Tail)
}

// Reads capped by max never split a character, whatever the cap: the pieces put together are
// the screen output, and each is valid UTF-8.
func TestTerminalCappedReadsKeepCharactersWhole(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	text := strings.Repeat("héllo wörld ✓ 😀 ", 50)
	term, err := svc.Spawn(context.Background(), subprocess.Spec{
		Path: "printf", Args: []string{"%s", text}, TTY: &subprocess.TTY{},
	})
	require.NoError(t, err)
	defer term.Close()
	_, err = term.Wait(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	for _, limit := range []int{1, 2, 3, 5, 7, 64} {
		var got strings.Builder
		var from int64
		for {
			d, err := term.ReadOutput(subprocess.Stdout, from, limit)
			require.NoError(t, err)
			require.True(t, utf8.Valid(d.Data), "max %d: read at %d is not whole characters: %q", limit, from, d.Data)
			require.LessOrEqual(t, len(d.Data), max(limit, utf8.UTFMax))
			got.Write(d.Data)
			if d.Next == d.Total {
				break
			}
			require.Greater(t, d.Next, from, "max %d: no progress at %d", limit, from)
			from = d.Next
		}
		assert.Equal(t, text, got.String(), "max %d", limit)
	}
}

// A terminal whose program has exited, with nothing left holding the terminal, leaves the
// Service's live set without Close.
func TestEndedTerminalLeavesTheLiveSet(t *testing.T) {
	svc := newService(t, subprocess.Config{MaxLive: 1})
	term, err := svc.Spawn(context.Background(), subprocess.Spec{Path: "echo", Args: []string{"hi"}, TTY: &subprocess.TTY{}})
	require.NoError(t, err)
	defer term.Close()
	_, err = term.Wait(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		h, err := svc.Spawn(context.Background(), subprocess.Spec{Path: "true"})
		if err != nil {
			require.ErrorIs(t, err, subprocess.ErrLimit)
			return false
		}
		h.Close()
		return true
	}, 5*time.Second, 5*time.Millisecond, "the ended terminal still counts against MaxLive")
}
