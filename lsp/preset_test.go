package lsp_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/lsp"
)

func TestPresets(t *testing.T) {
	for _, name := range []string{"gopls", "/opt/bin/gopls", "pyright", "pyright-langserver", "pyright-strict", "typescript-language-server",
		"clangd", "clangd.exe", "bash-language-server", "yaml-language-server", "pylsp"} {
		p, ok := lsp.Preset(name)
		assert.True(t, ok, name)
		assert.NotEmpty(t, p.Path, name)
	}
	_, ok := lsp.Preset("nonesuch")
	assert.False(t, ok)

	cfg := lsp.WithPreset(lsp.Config{Path: "pyright"})
	assert.Equal(t, "pyright-langserver", cfg.Path)
	assert.Equal(t, []string{"--stdio"}, cfg.Args)
	assert.Equal(t, "standard", cfg.Settings["python"].(map[string]any)["analysis"].(map[string]any)["typeCheckingMode"], "the nested form pyright reads")
	own := lsp.WithPreset(lsp.Config{Path: "/x/clangd", Args: []string{"--log=error"}, Settings: map[string]any{"a": 1}})
	assert.Equal(t, "/x/clangd", own.Path)
	assert.Equal(t, []string{"--log=error"}, own.Args, "the caller's fields are kept")
	assert.Equal(t, map[string]any{"a": 1}, own.Settings)
	assert.Equal(t, []lsp.PositionEncoding{lsp.UTF8, lsp.UTF16}, own.PositionEncodings)
	assert.Equal(t, lsp.Config{Path: "other"}, lsp.WithPreset(lsp.Config{Path: "other"}))
}

// pyright's strict preset reports what standard checking lets pass (a parameter of unknown
// type): its settings reach pyright in the shape it reads.
func TestPyrightStrictPreset(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the test servers are installed on Linux and macOS")
	}
	path := findServer(t, "SUBKIT_PYRIGHT", "npm", ".bin/npm/node_modules/.bin/pyright-langserver", "pyright-langserver")
	const text = "def f(x):\n    return x\n"
	count := func(preset string) int {
		e := newEnv(t)
		cfg, ok := lsp.Preset(preset)
		require.True(t, ok)
		cfg.Path, cfg.Root = path, t.TempDir()
		writeFile(t, cfg.Root, "a.py", text)
		c, err := lsp.Start(ctxT(t, 60*time.Second), e.svc, cfg)
		require.NoError(t, err)
		defer c.Close()
		uri, err := openFile(ctxT(t, 10*time.Second), c, "a.py")
		require.NoError(t, err)
		set, err := c.Diagnostics(ctxT(t, 60*time.Second), uri, 1)
		require.NoError(t, err)
		return len(set.Diagnostics)
	}
	assert.Zero(t, count("pyright"))
	assert.Positive(t, count("pyright-strict"), "strict: the parameter's type is unknown")
}
