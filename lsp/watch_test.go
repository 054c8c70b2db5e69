package lsp_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/lsp"
)

// FilesChanged: the server gets the events its registered watcher wants (and no others), and
// a dependent document's diagnostics follow the disk: the set from before the event is not
// taken, the republished one is. An open document changed on disk is sent again, one deleted
// is closed.
func TestFilesChangedFollowsTheDisk(t *testing.T) {
	e := newEnv(t)
	registered := make(chan struct{})
	var once sync.Once
	c := e.start(t, lsp.Config{FileEventSettle: 200 * time.Millisecond, Handlers: map[string]lsp.RequestHandler{
		"client/registerCapability": func(context.Context, json.RawMessage) (any, error) {
			once.Do(func() { close(registered) })
			return nil, nil
		},
	}}, "-watch=**/*.dep")
	root := c.Root()
	select { // the server registers its watcher once initialized, on its own time
	case <-registered:
	case <-ctxT(t, 30*time.Second).Done():
		t.Fatal("the fake server never registered its watcher")
	}
	a := writeFile(t, root, "a.txt", "need b.dep\n")
	uri, err := openFile(ctxT(t, 10*time.Second), c, "a.txt")
	require.NoError(t, err)
	set, err := c.Diagnostics(ctxT(t, 30*time.Second), uri, 1)
	require.NoError(t, err)
	require.Len(t, set.Diagnostics, 1)
	assert.Equal(t, "missing b.dep", set.Diagnostics[0].Message)

	// The dependency appears on disk: the client says so, the server republishes.
	dep := writeFile(t, root, "b.dep", "here\n")
	other := writeFile(t, root, "c.other", "not watched\n")
	require.NoError(t, c.FilesChanged(ctxT(t, 10*time.Second),
		lsp.FileEvent{URI: lsp.FileURI(dep), Type: lsp.FileCreated}, lsp.FileEvent{URI: lsp.FileURI(other), Type: lsp.FileCreated}))
	set, err = c.Diagnostics(ctxT(t, 30*time.Second), uri, 1)
	require.NoError(t, err)
	assert.Empty(t, set.Diagnostics, "the set published after the event, not the one held from before")
	var watched []lsp.FileEvent
	require.NoError(t, c.Call(ctxT(t, 10*time.Second), "test/watched", nil, &watched))
	assert.Equal(t, []lsp.FileEvent{{URI: lsp.FileURI(dep), Type: lsp.FileCreated}}, watched, "only what the registered glob wants")

	// An event that changes nothing for the open document: the server stays silent, and the
	// held set is taken once it has been quiet after the event.
	require.NoError(t, c.FilesChanged(ctxT(t, 10*time.Second), lsp.FileEvent{URI: lsp.FileURI(dep), Type: lsp.FileChanged}))
	set, err = c.Diagnostics(ctxT(t, 30*time.Second), uri, 1)
	require.NoError(t, err)
	assert.Empty(t, set.Diagnostics)

	// The open document itself changes on disk: sent again as version 2; deleted: closed.
	require.NoError(t, os.WriteFile(a, []byte("an ERROR\n"), 0o644))
	require.NoError(t, c.FilesChanged(ctxT(t, 10*time.Second), lsp.FileEvent{URI: uri, Type: lsp.FileChanged}))
	doc, ok := c.Document(uri)
	require.True(t, ok)
	assert.Equal(t, 2, doc.Version)
	assert.Equal(t, "an ERROR\n", doc.Text)
	set, err = c.Diagnostics(ctxT(t, 30*time.Second), uri, 2)
	require.NoError(t, err)
	assert.Len(t, set.Diagnostics, 1)
	require.NoError(t, os.Remove(a))
	require.NoError(t, c.FilesChanged(ctxT(t, 10*time.Second), lsp.FileEvent{URI: uri, Type: lsp.FileDeleted}))
	_, ok = c.Document(uri)
	assert.False(t, ok, "a deleted file's document is closed")

	for _, bad := range []lsp.FileEvent{{URI: "", Type: lsp.FileChanged}, {URI: uri, Type: 9}} {
		err := c.FilesChanged(ctxT(t, 10*time.Second), bad)
		assert.ErrorContains(t, err, "want a URI and FileCreated, FileChanged or FileDeleted")
	}
	require.NoError(t, c.Close())
}

// Config.WatchFiles: changes on disk reach the server without a call, and SyncFiles waits
// until they have; an open document changed on disk follows it.
func TestWatchFiles(t *testing.T) {
	e := newEnv(t)
	root := t.TempDir()
	writeFile(t, root, "a.txt", "need sub/b.dep\n")
	c := e.start(t, lsp.Config{Root: root, WatchFiles: true, FileEventSettle: 200 * time.Millisecond}, "-watch=**/*.dep")
	uri, err := openFile(ctxT(t, 10*time.Second), c, "a.txt")
	require.NoError(t, err)
	set, err := c.Diagnostics(ctxT(t, 30*time.Second), uri, 1)
	require.NoError(t, err)
	require.Len(t, set.Diagnostics, 1)

	// A new directory with the dependency in it, made by someone else.
	writeFile(t, root, "sub/b.dep", "here\n")
	require.NoError(t, c.SyncFiles(ctxT(t, 30*time.Second)))
	set, err = c.Diagnostics(ctxT(t, 30*time.Second), uri, 1)
	require.NoError(t, err)
	assert.Empty(t, set.Diagnostics)
	var watched []lsp.FileEvent
	require.NoError(t, c.Call(ctxT(t, 10*time.Second), "test/watched", nil, &watched))
	assert.Contains(t, watched, lsp.FileEvent{URI: lsp.FileURI(filepath.Join(root, "sub", "b.dep")), Type: lsp.FileCreated})

	require.NoError(t, os.Remove(filepath.Join(root, "sub", "b.dep")))
	require.NoError(t, os.WriteFile(filepath.Join(root, "a.txt"), []byte("need sub/b.dep\nan ERROR\n"), 0o644))
	require.NoError(t, c.SyncFiles(ctxT(t, 30*time.Second)))
	doc, ok := c.Document(uri)
	require.True(t, ok)
	assert.Equal(t, 2, doc.Version, "the open document followed the disk")
	set, err = c.Diagnostics(ctxT(t, 30*time.Second), uri, 2)
	require.NoError(t, err)
	assert.Len(t, set.Diagnostics, 2, "%+v", set)
	require.NoError(t, c.Call(ctxT(t, 10*time.Second), "test/watched", nil, &watched))
	raw, _ := json.Marshal(watched)
	assert.Contains(t, string(raw), `"type":3`, "the deletion was sent")
	require.NoError(t, c.Close())
	require.NoError(t, c.Close(), "closing twice is safe")
}
