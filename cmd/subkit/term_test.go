//go:build linux

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestTermScriptJSON(t *testing.T) {
	script := filepath.Join(t.TempDir(), "script")
	require.NoError(t, os.WriteFile(script, []byte("echo hi-$((1+1))\nsleep 0.3\nexit 3\n"), 0o600))
	code, out, _ := cli(t, "", "term", "--script", script, "--json", "--", "bash", "--norc", "--noprofile", "-i")
	require.Equal(t, 0, code)
	o := decode[termOutput](t, out)
	assert.Contains(t, o.Transcript, "hi-2")
	require.NotNil(t, o.ExitCode)
	assert.Equal(t, 3, *o.ExitCode)
	assert.Equal(t, "", o.Signal)
	var comms []string
	for _, e := range o.ForegroundSeen {
		comms = append(comms, e.Comm)
	}
	assert.Contains(t, comms, "bash")
	assert.Contains(t, comms, "sleep", "the sleep was seen in the foreground before exit was typed")
}

func TestTermScriptTimeout(t *testing.T) {
	script := filepath.Join(t.TempDir(), "script")
	require.NoError(t, os.WriteFile(script, []byte("sleep 1000 &\n"), 0o600))
	code, out, _ := cli(t, "", "term", "--script", script, "--timeout", "500ms", "--json", "--", "bash", "--norc", "--noprofile", "-i")
	require.Equal(t, 0, code)
	o := decode[termOutput](t, out)
	assert.Nil(t, o.ExitCode)
	assert.Equal(t, "SIGHUP", o.Signal)
}

func TestTermErrors(t *testing.T) {
	code, out, _ := cli(t, "", "term", "--json", "--", "bash")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, out, `"invalid"`)
	script := filepath.Join(t.TempDir(), "s")
	require.NoError(t, os.WriteFile(script, nil, 0o600))
	code, out, _ = cli(t, "", "term", "--script", script, "--json", "--", "no-such-program-xyz")
	assert.Equal(t, exitNotFound, code)
	assert.Contains(t, out, `"not_found"`)
}

// The interactive pass-through, driven through a pty standing in for the user's terminal.
func TestTermInteractive(t *testing.T) {
	leakChecked(t)
	user, tty, err := pty.Open()
	require.NoError(t, err)
	defer user.Close()
	defer tty.Close()
	before, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	require.NoError(t, err)

	var out lockedBuffer
	done := make(chan int)
	go func() {
		done <- run(context.Background(), []string{"term", "--", "bash", "-c", "read x; echo got:$x; exit 4"}, tty, &out, &out)
	}()
	_, err = user.Write([]byte("abc\r"))
	require.NoError(t, err)
	select {
	case code := <-done:
		assert.Equal(t, 4, code)
	case <-time.After(10 * time.Second):
		t.Fatal("subkit term did not return")
	}
	assert.Contains(t, out.String(), "got:abc")
	after, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	require.NoError(t, err)
	assert.Equal(t, before.Lflag, after.Lflag, "the caller's terminal mode is restored")
	flags, err := unix.FcntlInt(tty.Fd(), unix.F_GETFL, 0)
	require.NoError(t, err)
	assert.Zero(t, flags&unix.O_NONBLOCK, "the caller's stdin is blocking again")
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.ReplaceAll(l.b.String(), "\r", "")
}
