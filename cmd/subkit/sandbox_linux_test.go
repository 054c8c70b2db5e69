package main

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// subkit bash --sandbox writes only where it may, and says which backend enforced.
// outsideDir is a directory outside the writable roots and outside /tmp, which a namespaced
// sandbox replaces by a private one (a write there would not be refused but vanish).
func outsideDir(t *testing.T) string {
	t.Helper()
	base, err := filepath.Abs(filepath.Join("..", "..", ".build", "test-roots"))
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(base, 0o755))
	d, err := os.MkdirTemp(base, "outside-")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, os.RemoveAll(d)) })
	return d
}

// refusedWrite reports whether a Python error name is that of a refused write: EACCES under
// Landlock, EROFS in a mount namespace.
func refusedWrite(name string) bool { return name == "PermissionError" || name == "OSError" }

func TestBashSandboxJSON(t *testing.T) {
	dir, outside := t.TempDir(), outsideDir(t)
	code, out, _ := cli(t, "", "bash", "--sandbox", "--writable", dir, "--json",
		"touch "+dir+"/ok; touch "+outside+"/x-outside")
	require.Equal(t, 0, code, out)
	res := decode[bashOutput](t, out)
	require.NotNil(t, res.Sandbox, out)
	assert.NotEmpty(t, res.Sandbox.Backend)
	assert.Equal(t, "off", res.Sandbox.Network)
	assert.NotNil(t, res.Sandbox.Unenforced)
	assert.FileExists(t, filepath.Join(dir, "ok"))
	assert.NoFileExists(t, filepath.Join(outside, "x-outside"))
	assert.NotEqual(t, 0, *res.ExitCode, "the refused touch fails the command")

	code, out, _ = cli(t, "", "exec", "--sandbox", "--network", "on", "--json", "--", "true")
	require.Equal(t, 0, code, out)
	assert.Equal(t, "on", decode[execOutput](t, out).Sandbox.Network)

	code, out, _ = cli(t, "", "code", "--lang", "python3", "--sandbox", "--json", "open("+strconv.Quote(outside+"/py")+", 'w')")
	require.Equal(t, 0, code, out)
	co := decode[codeOutput](t, out)
	require.NotNil(t, co.Sandbox, out)
	assert.Equal(t, 1, *co.ExitCode)
	require.NotNil(t, co.Error, "the structured error survives the sandbox: %s", out)
	assert.True(t, refusedWrite(co.Error.Name), co.Error.Name)
	assert.NoFileExists(t, filepath.Join(outside, "py"))

	code, _, stderr := cli(t, "", "exec", "--writable", dir, "--", "true")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "--writable applies with --sandbox only")
	code, _, stderr = cli(t, "", "bash", "--sandbox", "--network", "maybe", "true")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, `--network "maybe"`)
}
