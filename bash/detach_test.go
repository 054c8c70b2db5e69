//go:build unix

package bash_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/bash"
)

// Request.Dir: absolute, relative to Config.Cwd, and refused (naming Dir) when it is missing,
// a file or holds a NUL; Start takes it too.
func TestRequestDir(t *testing.T) {
	cwd := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(cwd, "sub"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(cwd, "file"), nil, 0o600))
	e, _ := newExecutor(t, bash.Config{Cwd: cwd})
	other := t.TempDir()
	res := exec(t, e, bash.Request{Command: "pwd -P", Dir: other})
	want, err := filepath.EvalSymlinks(other)
	require.NoError(t, err)
	assert.Equal(t, want+"\n", string(res.Stdout.Tail))
	res = exec(t, e, bash.Request{Command: "pwd -P", Dir: "sub"})
	want, err = filepath.EvalSymlinks(filepath.Join(cwd, "sub"))
	require.NoError(t, err)
	assert.Equal(t, want+"\n", string(res.Stdout.Tail), "relative to Config.Cwd")

	for _, tc := range []struct{ dir, want string }{
		{"missing", "does not exist"},
		{"file", "is not a directory"},
		{"a\x00b", "NUL"},
	} {
		_, err := e.Exec(context.Background(), bash.Request{Command: "true", Dir: tc.dir})
		requestErr(t, err, "Dir", "")
		assert.Contains(t, err.Error(), tc.want)
		_, err = e.Start(context.Background(), bash.Request{Command: "true", Dir: tc.dir})
		requestErr(t, err, "Dir", "")
	}
	p, err := e.Start(context.Background(), bash.Request{Command: "pwd -P", Dir: "sub"})
	require.NoError(t, err)
	defer p.Close()
	r, err := p.Wait(ctxT(t, time.Minute))
	require.NoError(t, err)
	assert.Equal(t, want+"\n", string(r.Stdout.Tail))
}

// ExecOrStart: a command that ends within the wait gives Exec's result; one still running
// goes on in the background, its output read whole from offset 0 and its end waited for.
func TestExecOrStart(t *testing.T) {
	e, _ := newExecutor(t, bash.Config{})
	res, p, err := e.ExecOrStart(ctxT(t, time.Minute), bash.Request{Command: "echo hi"}, time.Minute, nil)
	require.NoError(t, err)
	assert.Nil(t, p)
	assert.Equal(t, "hi\n", string(res.Stdout.Tail))
	assert.Equal(t, e.Config().Timeout, res.Timeout, "the timeout that would have applied, as with Exec")
	assert.Equal(t, "hi\n[exit code 0]\n", bash.Render(res, nil))

	fifo := filepath.Join(t.TempDir(), "go-on")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	admitted := 0
	res, p, err = e.ExecOrStart(ctxT(t, time.Minute), bash.Request{Command: "echo before; read -r x < " + fifo + "; echo after $x; exit 3"},
		50*time.Millisecond, func() (func(), error) { admitted++; return func() {}, nil })
	require.NoError(t, err)
	require.NotNil(t, p, "still blocked on the FIFO after the wait")
	defer p.Close()
	assert.Equal(t, 1, admitted)
	assert.Zero(t, res.Pid)
	assert.Equal(t, 1, e.Stats().Running)
	d, err := p.WaitOutput(ctxT(t, time.Minute), bash.Offsets{}, 0)
	require.NoError(t, err)
	assert.Equal(t, "before\n", string(d.Stdout.Data))
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("now\n")
	require.NoError(t, errors.Join(err, f.Close()))
	r, err := p.Wait(ctxT(t, time.Minute))
	require.NoError(t, err)
	assert.Equal(t, 3, r.ExitCode)
	assert.Zero(t, r.Timeout, "no timeout in the background")
	d, err = p.ReadOutput(bash.Offsets{}, 0)
	require.NoError(t, err)
	assert.Equal(t, "before\nafter now\n", string(d.Stdout.Data))
	assert.True(t, d.Done())
}

// When the background is refused (by admit, or by MaxBackground), the command stays in the
// foreground and its timeout ends it; cancellation during the wait ends the tree; a wait not
// below the timeout is Exec; a wait that is not positive is refused.
func TestExecOrStartStaysInForeground(t *testing.T) {
	e, _ := newExecutor(t, bash.Config{MaxBackground: 1, Grace: 100 * time.Millisecond})
	refuse := func() (func(), error) { return nil, errors.New("the caller's limit") }
	res, p, err := e.ExecOrStart(ctxT(t, time.Minute), bash.Request{Command: "exec sleep 600", Timeout: 300 * time.Millisecond},
		50*time.Millisecond, refuse)
	require.NoError(t, err)
	assert.Nil(t, p)
	assert.True(t, res.TimedOut)
	assert.Equal(t, 300*time.Millisecond, res.Timeout)
	assert.Contains(t, bash.Render(res, nil), "[timed out after 300ms")

	bg := start(t, e, "exec sleep 600") // the one background slot
	res, p, err = e.ExecOrStart(ctxT(t, time.Minute), bash.Request{Command: "exec sleep 600", Timeout: 300 * time.Millisecond},
		50*time.Millisecond, nil)
	require.NoError(t, err)
	assert.Nil(t, p)
	assert.True(t, res.TimedOut, "MaxBackground reached: it stayed in the foreground")
	require.NoError(t, bg.Close())

	flag := filepath.Join(t.TempDir(), "started")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var cres bash.Result
	go func() {
		defer close(done)
		cres, p, err = e.ExecOrStart(ctx, bash.Request{Command: "sleep 600 & setsid sleep 600 & touch " + flag + "; wait"}, time.Minute, nil)
	}()
	eventually(t, time.Minute, func() bool { _, err := os.Stat(flag); return err == nil }, "the sleeps did not start")
	cancel()
	<-done
	require.NoError(t, err)
	assert.Nil(t, p)
	assert.True(t, cres.Cancelled)
	assert.Zero(t, e.Stats().Lingering, "the setsid sleep ended with the tree")

	res, p, err = e.ExecOrStart(ctxT(t, time.Minute), bash.Request{Command: "exec sleep 600", Timeout: 200 * time.Millisecond}, time.Hour, nil)
	require.NoError(t, err)
	assert.Nil(t, p)
	assert.True(t, res.TimedOut, "a wait above the timeout is Exec")

	for _, wait := range []time.Duration{0, -time.Second} {
		_, _, err = e.ExecOrStart(context.Background(), bash.Request{Command: "true"}, wait, nil)
		requestErr(t, err, "wait", "")
	}
	_, _, err = e.ExecOrStart(context.Background(), bash.Request{Command: "true", Dir: "/nonexistent-dir"}, time.Second, nil)
	requestErr(t, err, "Dir", "")
}
