package lsp_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/lsp"
	"github.com/subkit/subkit/subprocess"
)

// A server that escapes URIs its own way (as VS Code's vscode-uri does: %2B, %20, %28, and on
// Windows file:///c%3A/...) publishes diagnostics that the client still files under the URI
// it opened the document with.
func TestPublishedURIEscapedOtherwise(t *testing.T) {
	e := newEnv(t)
	root := t.TempDir()
	dir := filepath.Join(root, "a+b (1)")
	require.NoError(t, os.Mkdir(dir, 0o755))
	path := filepath.Join(dir, "notes.txt")
	text := "all good\nan ERROR here\n"
	require.NoError(t, os.WriteFile(path, []byte(text), 0o644))

	c := e.start(t, lsp.Config{Root: root}, "-escape-uris")
	uri := lsp.FileURI(path)
	version, err := c.Open(ctxT(t, 30*time.Second), uri, "plaintext", text)
	require.NoError(t, err)
	set, err := c.Diagnostics(ctxT(t, 30*time.Second), uri, version)
	require.NoError(t, err)
	assert.Equal(t, uri, set.URI)
	require.Len(t, set.Diagnostics, 1)
	assert.Equal(t, "found ERROR", set.Diagnostics[0].Message)
	for _, other := range c.AllDiagnostics() {
		assert.Equal(t, uri, other.URI, "no set under the server's spelling of the URI")
	}
}

// URIs of Windows paths: drive letters both ways (a lower-case or escaped one comes back
// upper-case), UNC paths through the URI's host, escaping.
func TestFileURIWindows(t *testing.T) {
	if runtime.GOOS != "windows" {
		t.Skip("Windows paths")
	}
	for path, uri := range map[string]string{
		`C:\Users\me\main.go`:        "file:///C:/Users/me/main.go",
		`C:\with space\ü.go`:         "file:///C:/with%20space/%C3%BC.go",
		`\\server\share\dir\main.go`: "file://server/share/dir/main.go",
	} {
		assert.Equal(t, uri, lsp.FileURI(path))
		back, err := lsp.URIToPath(uri)
		require.NoError(t, err)
		assert.Equal(t, path, back)
	}
	for uri, path := range map[string]string{
		"file:///c%3A/Users/me/main.go": `C:\Users\me\main.go`,
		"file:///c:/a%2Bb/x.go":         `C:\a+b\x.go`,
		"file://localhost/C:/x.go":      `C:\x.go`,
	} {
		back, err := lsp.URIToPath(uri)
		require.NoError(t, err, uri)
		assert.Equal(t, path, back, uri)
	}
	// A real path of this machine makes the same round trip.
	dir := t.TempDir()
	back, err := lsp.URIToPath(lsp.FileURI(dir))
	require.NoError(t, err)
	assert.True(t, strings.EqualFold(dir, back), "%s -> %s", dir, back)
}

// Elsewhere a URI with a host names no local file.
func TestURIToPathHost(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a host is a UNC path on Windows")
	}
	_, err := lsp.URIToPath("file://server/share/x.go")
	require.ErrorIs(t, err, subprocess.ErrInvalid)
	back, err := lsp.URIToPath("file://localhost/tmp/x.go")
	require.NoError(t, err)
	assert.Equal(t, "/tmp/x.go", back)
}
