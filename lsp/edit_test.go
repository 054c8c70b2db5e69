//go:build unix

package lsp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/lsp"
)

func rng(l1, c1, l2, c2 int) lsp.Range {
	return lsp.Range{Start: lsp.Position{Line: l1, Character: c1}, End: lsp.Position{Line: l2, Character: c2}}
}

func intp(v int) *int { return &v }

// ApplyEdit: text edits to an open document (its version checked, the client's copy edited
// and sent) and to a file on disk, then a create, a rename and a delete; a bad edit changes
// nothing.
func TestApplyEditOnDisk(t *testing.T) {
	e := newEnv(t)
	root := t.TempDir()
	open := writeFile(t, root, "open.txt", "an ERROR here\n")
	closed := writeFile(t, root, "closed.txt", "one two\n")
	require.NoError(t, os.Chmod(closed, 0o640))
	c := e.start(t, lsp.Config{Root: root}, "-sync=2")
	uri, err := openFile(ctxT(t, 10*time.Second), c, "open.txt")
	require.NoError(t, err)

	// Refused edits change nothing: a stale version, a file outside the root, overlaps.
	before := func() {
		t.Helper()
		b, _ := os.ReadFile(open)
		assert.Equal(t, "an ERROR here\n", string(b))
		d, _ := c.Document(uri)
		assert.Equal(t, 1, d.Version)
	}
	for _, tc := range []struct {
		edit lsp.WorkspaceEdit
		want error
	}{
		{lsp.WorkspaceEdit{DocumentChanges: []lsp.DocumentChange{{TextDocument: lsp.VersionedDocument{URI: uri, Version: intp(7)}, Edits: []lsp.TextEdit{{Range: rng(0, 0, 0, 2), NewText: "A"}}}}}, lsp.ErrVersionMismatch},
		{lsp.WorkspaceEdit{Changes: map[string][]lsp.TextEdit{uri: {{Range: rng(0, 0, 0, 2)}}, lsp.FileURI(filepath.Join(filepath.Dir(root), "x.txt")): {{Range: rng(0, 0, 0, 0), NewText: "x"}}}}, lsp.ErrOutsideRoot},
		{lsp.WorkspaceEdit{Changes: map[string][]lsp.TextEdit{uri: {{Range: rng(0, 0, 0, 5)}, {Range: rng(0, 3, 0, 6)}}}}, lsp.ErrBadEdit},
		{lsp.WorkspaceEdit{DocumentChanges: []lsp.DocumentChange{{Kind: "create", URI: uri}}}, lsp.ErrBadEdit},
		{lsp.WorkspaceEdit{DocumentChanges: []lsp.DocumentChange{{Kind: "delete", URI: lsp.FileURI(filepath.Join(root, "none"))}}}, lsp.ErrBadEdit},
	} {
		_, err := c.ApplyEdit(ctxT(t, 10*time.Second), tc.edit)
		assert.ErrorIs(t, err, tc.want)
		var ee *lsp.EditError
		require.ErrorAs(t, err, &ee)
		assert.False(t, ee.Applied)
		before()
	}

	edit := lsp.WorkspaceEdit{DocumentChanges: []lsp.DocumentChange{
		{TextDocument: lsp.VersionedDocument{URI: uri, Version: intp(1)}, Edits: []lsp.TextEdit{{Range: rng(0, 3, 0, 8), NewText: "all fine"}}},
		{TextDocument: lsp.VersionedDocument{URI: lsp.FileURI(closed)}, Edits: []lsp.TextEdit{{Range: rng(0, 4, 0, 7), NewText: "2"}}},
		{Kind: "create", URI: lsp.FileURI(filepath.Join(root, "sub", "new.txt"))},
		{TextDocument: lsp.VersionedDocument{URI: lsp.FileURI(filepath.Join(root, "sub", "new.txt"))}, Edits: []lsp.TextEdit{{Range: rng(0, 0, 0, 0), NewText: "fresh\n"}}},
		{Kind: "rename", OldURI: lsp.FileURI(filepath.Join(root, "sub", "new.txt")), NewURI: lsp.FileURI(filepath.Join(root, "moved.txt"))},
		{Kind: "delete", URI: lsp.FileURI(filepath.Join(root, "sub")), Options: &lsp.FileOptions{Recursive: true}},
	}}
	res, err := c.ApplyEdit(ctxT(t, 10*time.Second), edit)
	require.NoError(t, err)
	assert.Equal(t, []string{open, closed, filepath.Join(root, "sub", "new.txt")}, res.Changed)
	assert.Equal(t, [][2]string{{filepath.Join(root, "sub", "new.txt"), filepath.Join(root, "moved.txt")}}, res.Renamed)
	assert.Equal(t, []string{uri}, res.Synced)
	for name, want := range map[string]string{"open.txt": "an all fine here\n", "closed.txt": "one 2\n", "moved.txt": "fresh\n"} {
		b, err := os.ReadFile(filepath.Join(root, name))
		require.NoError(t, err)
		assert.Equal(t, want, string(b), name)
	}
	fi, err := os.Stat(closed)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o640), fi.Mode().Perm(), "the file's mode is kept")
	_, err = os.Stat(filepath.Join(root, "sub"))
	assert.ErrorIs(t, err, os.ErrNotExist)
	d, ok := c.Document(uri)
	require.True(t, ok)
	assert.Equal(t, 2, d.Version)
	assert.Equal(t, "an all fine here\n", d.Text)
	var server struct {
		Text string `json:"text"`
	}
	require.NoError(t, c.Call(ctxT(t, 10*time.Second), "test/text", map[string]string{"uri": uri}, &server))
	assert.Equal(t, "an all fine here\n", server.Text, "the server has the edited text")
	require.NoError(t, c.Close())
}

// With ApplyEditHandler in Config.Handlers the client declares applyEdit and applies what
// the server asks for; without it the server is told no.
func TestApplyEditHandler(t *testing.T) {
	e := newEnv(t)
	root := t.TempDir()
	f := writeFile(t, root, "a.txt", "old\n")
	edit := map[string]any{"edit": map[string]any{"changes": map[string]any{lsp.FileURI(f): []any{
		map[string]any{"range": rng(0, 0, 0, 3), "newText": "new"}}}}}
	var answer struct {
		Result lsp.ApplyEditResult `json:"result"`
	}
	c := e.start(t, lsp.Config{Root: root})
	require.NoError(t, c.Call(ctxT(t, 10*time.Second), "test/request", map[string]any{"method": "workspace/applyEdit", "params": edit}, &answer))
	assert.False(t, answer.Result.Applied)
	assert.Contains(t, answer.Result.FailureReason, "lsp.ApplyEditHandler")

	c = e.start(t, lsp.Config{Root: root, Handlers: map[string]lsp.RequestHandler{"workspace/applyEdit": lsp.ApplyEditHandler}})
	var caps struct {
		Workspace struct {
			ApplyEdit bool `json:"applyEdit"`
		} `json:"workspace"`
	}
	require.NoError(t, json.Unmarshal(experimental(t, c)["initParams"], &struct {
		Capabilities any `json:"capabilities"`
	}{&caps}))
	assert.True(t, caps.Workspace.ApplyEdit)
	require.NoError(t, c.Call(ctxT(t, 10*time.Second), "test/request", map[string]any{"method": "workspace/applyEdit", "params": edit}, &answer))
	assert.True(t, answer.Result.Applied, "%+v", answer.Result)
	b, _ := os.ReadFile(f)
	assert.Equal(t, "new\n", string(b))
	require.NoError(t, c.Call(ctxT(t, 10*time.Second), "test/request", map[string]any{"method": "workspace/applyEdit", "params": map[string]any{
		"edit": map[string]any{"changes": map[string]any{lsp.FileURI("/etc/passwd"): []any{map[string]any{"range": rng(0, 0, 0, 0), "newText": "x"}}}}}}, &answer))
	assert.False(t, answer.Result.Applied)
	assert.Contains(t, answer.Result.FailureReason, "outside the workspace root")
	require.NotNil(t, answer.Result.FailedChange)
	assert.Equal(t, 0, *answer.Result.FailedChange)
}
