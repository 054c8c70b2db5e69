package main

import (
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// subkit bash --sandbox writes only where it may, and says which backend enforced.
func TestBashSandboxJSON(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
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
	assert.Equal(t, "PermissionError", co.Error.Name)
	assert.NoFileExists(t, filepath.Join(outside, "py"))

	code, _, stderr := cli(t, "", "exec", "--writable", dir, "--", "true")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "--writable applies with --sandbox only")
	code, _, stderr = cli(t, "", "bash", "--sandbox", "--network", "maybe", "true")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, `--network "maybe"`)
}
