package bash_test

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/bash"
	"github.com/subkit/subkit/sandbox"
)

func TestSandboxedCommand(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the sandbox backends are Linux's")
	}
	work, outside := t.TempDir(), "/etc" // a private /tmp would take a write outside under /tmp
	e, _ := newExecutor(t, bash.Config{Cwd: work, Sandbox: &sandbox.Policy{}})
	res, err := e.Exec(context.Background(), bash.Request{Command: `touch ok && touch ` + outside + `/no`})
	require.NoError(t, err)
	require.NotNil(t, res.Sandbox)
	assert.FileExists(t, filepath.Join(work, "ok"), "the working directory is writable by default")
	assert.NoFileExists(t, filepath.Join(outside, "no"))
	text := bash.Render(res, nil)
	assert.Contains(t, text, "[sandbox: ", "the model is told the sandbox likely refused it:\n"+text)
	assert.Contains(t, text, "--writable DIR", "it says what would allow it")
	assert.Contains(t, text, "("+string(res.Sandbox.Backend)+" backend)]")
	assert.Less(t, len(text), 400, "one line, not the Report")

	res, err = e.Exec(context.Background(), bash.Request{Command: `echo fine`})
	require.NoError(t, err)
	assert.Equal(t, "fine\n[exit code 0]\n", bash.Render(res, nil), "nothing about the sandbox when nothing was refused")
}

func TestSandboxConfigFile(t *testing.T) {
	c, err := bash.ParseConfigYAML([]byte("sandbox:\n  writable: [/w]\n  hidden: [~/.x]\n  network: on\n  limits: {processes: 50, cpuSeconds: 9}\n"))
	require.NoError(t, err)
	require.NotNil(t, c.Sandbox)
	assert.Equal(t, sandbox.Policy{Writable: []string{"/w"}, Hidden: []string{"~/.x"}, Network: sandbox.NetworkOn,
		Limits: sandbox.Limits{Processes: 50, CPUSeconds: 9}}, *c.Sandbox)
	c, err = bash.ParseConfigYAML([]byte("sandbox:\n  hidden: [~/.x]\n  noDefaultHidden: true\n  allowUnixSockets: [/run/a.sock]\n"))
	require.NoError(t, err)
	assert.Equal(t, sandbox.Policy{Hidden: []string{"~/.x"}, NoDefaultHidden: true, AllowUnixSockets: []string{"/run/a.sock"}}, *c.Sandbox)
	c, err = bash.ParseConfigYAML([]byte("sandbox:\n  protected: [.tool-versions]\n  noDefaultProtected: true\n"))
	require.NoError(t, err)
	assert.Equal(t, sandbox.Policy{Protected: []string{".tool-versions"}, NoDefaultProtected: true}, *c.Sandbox)
	c, err = bash.ParseConfigYAML([]byte("sandbox: true\n"))
	require.NoError(t, err)
	assert.Equal(t, &sandbox.Policy{}, c.Sandbox)
	c, err = bash.ParseConfigJSON([]byte(`{"sandbox": {"network": "off", "limits": {"openFiles": 64}}}`))
	require.NoError(t, err)
	assert.Equal(t, uint64(64), c.Sandbox.Limits.OpenFiles)
	for _, bad := range []string{"sandbox: 3\n", "sandbox: {network: maybe}\n", "sandbox: {wrtable: [/w]}\n", "sandbox: {limits: {procs: 1}}\n",
		"sandbox: {noDefaultHidden: yes please}\n", "sandbox: {allowUnixSockets: /run/a.sock}\n",
		"sandbox: {noDefaultProtected: 1}\n", "sandbox: {protected: .envrc}\n"} {
		_, err := bash.ParseConfigYAML([]byte(bad))
		configErr(t, err, "sandbox")
	}
}
