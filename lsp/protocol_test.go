package lsp_test

import (
	"encoding/json"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/lsp"
)

func TestFileURI(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("POSIX paths")
	}
	for path, uri := range map[string]string{
		"/tmp/a/main.go":         "file:///tmp/a/main.go",
		"/tmp/with space/ü.go":   "file:///tmp/with%20space/%C3%BC.go",
		"/tmp/hash#/percent%.go": "file:///tmp/hash%23/percent%25.go",
	} {
		assert.Equal(t, uri, lsp.FileURI(path))
		back, err := lsp.URIToPath(uri)
		require.NoError(t, err)
		assert.Equal(t, filepath.Clean(path), back)
	}
	_, err := lsp.URIToPath("https://example.com/x")
	assert.Error(t, err)
	_, err = lsp.URIToPath("%zz")
	assert.Error(t, err)
}

func TestPositionFor(t *testing.T) {
	text := []byte("ab\nxü😀y\r\nlast")
	for _, c := range []struct {
		line, col int
		want      lsp.Position
	}{
		{1, 1, lsp.Position{Line: 0, Character: 0}},
		{1, 3, lsp.Position{Line: 0, Character: 2}}, // one past the end
		{2, 2, lsp.Position{Line: 1, Character: 1}}, // after x
		{2, 4, lsp.Position{Line: 1, Character: 2}}, // after ü (2 bytes, 1 UTF-16 unit)
		{2, 8, lsp.Position{Line: 1, Character: 4}}, // after 😀 (4 bytes, 2 UTF-16 units)
		{2, 9, lsp.Position{Line: 1, Character: 5}}, // end of a CRLF line
		{3, 5, lsp.Position{Line: 2, Character: 4}},
	} {
		got, err := lsp.PositionFor(text, c.line, c.col)
		require.NoError(t, err, "%d:%d", c.line, c.col)
		assert.Equal(t, c.want, got, "%d:%d", c.line, c.col)
	}
	for _, c := range [][2]int{{0, 1}, {1, 0}, {4, 1}, {1, 4}, {2, 10}} {
		_, err := lsp.PositionFor(text, c[0], c[1])
		assert.ErrorIs(t, err, lsp.ErrPosition, "%v", c)
	}
}

func TestLanguageID(t *testing.T) {
	for path, id := range map[string]string{
		"a/main.go": "go", "go.mod": "go.mod", "x.py": "python", "x.ts": "typescript", "x.tsx": "typescriptreact",
		"x.rs": "rust", "x.h": "c", "x.c": "c", "x.hpp": "cpp", "Makefile": "makefile", "README": "plaintext",
		"x.sh": "shellscript", "X.JSON": "json", "x.yml": "yaml",
	} {
		assert.Equal(t, id, lsp.LanguageID(path), path)
	}
}

func TestHoverText(t *testing.T) {
	for raw, want := range map[string]string{
		`{"kind":"markdown","value":"**x**"}`:                  "**x**",
		`"plain"`:                                              "plain",
		`{"language":"go","value":"func f()"}`:                 "func f()",
		`["one",{"language":"go","value":"two"},{"value":""}]`: "one\n\ntwo",
		`42`: "",
	} {
		h := &lsp.Hover{Contents: json.RawMessage(raw)}
		assert.Equal(t, want, h.Text(), raw)
	}
	var h *lsp.Hover
	assert.Equal(t, "", h.Text())
}

func TestEndedAndSeverity(t *testing.T) {
	b, err := json.Marshal(map[string]lsp.Ended{"a": lsp.EndedClean, "b": lsp.EndedTerminated, "c": lsp.EndedKilled, "d": lsp.EndedCrashed, "e": lsp.EndedUnknown})
	require.NoError(t, err)
	assert.JSONEq(t, `{"a":"clean","b":"terminated","c":"killed","d":"crashed","e":"unknown"}`, string(b))
	assert.Equal(t, "warning", lsp.SeverityWarning.String())
	assert.Equal(t, "hint", lsp.SeverityHint.String())
	assert.Equal(t, "information", lsp.SeverityInformation.String())
	assert.Equal(t, "severity 9", lsp.DiagnosticSeverity(9).String())
	assert.True(t, json.Valid(lsp.DefaultCapabilities()))
}
