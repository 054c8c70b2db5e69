package bash_test

import (
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/bash"
)

// The kit's own shell runs the executor's commands (Windows without Git Bash; anywhere by
// choice): status, output, the model environment, a timeout that ends the tree with the
// program below the shell, and a background process read by offset.
func TestKitShell(t *testing.T) {
	e, _ := newExecutor(t, bash.Config{Shell: bash.KitShell, Grace: 500 * time.Millisecond})
	assert.Equal(t, bash.KitShell, e.Config().Shell)

	exec := func(req bash.Request) bash.Result {
		t.Helper()
		res, err := e.Exec(ctxT(t, time.Minute), req)
		require.NoError(t, err)
		return res
	}
	res := exec(bash.Request{Command: `echo "hi $PYTHONUNBUFFERED ${SUBKIT_HELPER-unset}"; echo oops >&2; exit 3`})
	assert.Equal(t, 3, res.ExitCode)
	assert.Equal(t, "hi 1 unset\n", string(res.Stdout.Tail))
	assert.Equal(t, "oops\n", string(res.Stderr.Tail))

	long := "sleep 1000"
	if runtime.GOOS == "windows" {
		long = "ping -n 1000 127.0.0.1 >/dev/null"
	}
	res = exec(bash.Request{Command: "echo working; " + long, Timeout: 2 * time.Second})
	assert.True(t, res.TimedOut)
	assert.Equal(t, "working\n", string(res.Stdout.Tail))
	assert.Contains(t, bash.Render(res, nil), "timed out after 2s")

	p, err := e.Start(ctxT(t, time.Minute), bash.Request{Command: `for i in 1 2 3; do echo "line $i"; done`})
	require.NoError(t, err)
	res, err = p.Wait(ctxT(t, time.Minute))
	require.NoError(t, err)
	d, err := p.ReadOutput(bash.Offsets{}, 0)
	require.NoError(t, err)
	assert.Equal(t, "line 1\nline 2\nline 3\n", string(d.Stdout.Data))
}

// Config.Shell: a path is taken as given, and the file key "shell" sets it.
func TestShellConfig(t *testing.T) {
	c, err := bash.ParseConfigYAML([]byte("- id: bash\n  config: {shell: subkit-sh}\n"))
	require.NoError(t, err)
	assert.Equal(t, bash.KitShell, c.Shell)
	if runtime.GOOS == "windows" {
		return
	}
	path, err := filepath.EvalSymlinks("/bin/bash")
	if err != nil {
		t.Skip("no /bin/bash here")
	}
	e, _ := newExecutor(t, bash.Config{Shell: path})
	assert.Equal(t, path, e.Config().Shell)
	res, err := e.Exec(ctxT(t, time.Minute), bash.Request{Command: `echo "$BASH"`})
	require.NoError(t, err)
	assert.Equal(t, path+"\n", string(res.Stdout.Tail))
}
