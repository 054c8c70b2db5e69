package lsp_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/lsp"
)

// A server that publishes without versions and takes 700ms to check each text, handling
// messages in order: its set for a text arrives after the next text was sent, and a quiet
// timer alone takes it for the newer version. Ordered against a request that needs the
// current text, no older set is ever taken, broken or clean.
func TestUnversionedLateSetsNeverAnswerANewerText(t *testing.T) {
	e := newEnv(t)
	c := e.start(t, lsp.Config{}, "-unversioned", "-latency=700ms")
	uri := lsp.FileURI(filepath.Join(c.Root(), "a.txt"))
	_, err := c.Open(ctxT(t, 10*time.Second), uri, "plaintext", "ERROR ERROR")
	require.NoError(t, err)
	// Each round sends two texts at once and asks for the second: the first one's set arrives
	// 700ms later, after the second was sent; the second's 700ms after that.
	rounds := [][2]int{{0, 3}, {2, 0}, {1, 2}, {3, 1}}
	for i, r := range rounds {
		for _, n := range r {
			_, err := c.Change(ctxT(t, 10*time.Second), uri, lsp.TextChange{Text: strings.Repeat("ERROR ", n)})
			require.NoError(t, err)
		}
		doc, _ := c.Document(uri)
		set, err := c.Diagnostics(ctxT(t, 60*time.Second), uri, doc.Version)
		require.NoError(t, err)
		assert.Len(t, set.Diagnostics, r[1], "round %d: the set of version %d (%d errors), never the one before", i, doc.Version, r[1])
		assert.True(t, set.Ordered)
		assert.False(t, set.Versioned)
		assert.GreaterOrEqual(t, set.Version, doc.Version)
	}
	require.NoError(t, c.Close())
}

// A text changed away and back (clean, broken, clean again) to one the server has already
// checked: the server publishes nothing for it, and the client answers at once from the set
// it holds for that text.
func TestRevertAnsweredFromTheIdenticalText(t *testing.T) {
	e := newEnv(t)
	c := e.start(t, lsp.Config{}, "-dedupe")
	root := c.Root()
	uri := lsp.FileURI(filepath.Join(root, "a.txt"))
	other := lsp.FileURI(filepath.Join(root, "b.txt"))
	v1, err := c.Open(ctxT(t, 10*time.Second), uri, "plaintext", "fine")
	require.NoError(t, err)
	set, err := c.Diagnostics(ctxT(t, 30*time.Second), uri, v1)
	require.NoError(t, err)
	assert.Empty(t, set.Diagnostics)
	v2, err := c.Change(ctxT(t, 10*time.Second), uri, lsp.TextChange{Text: "an ERROR"})
	require.NoError(t, err)
	set, err = c.Diagnostics(ctxT(t, 30*time.Second), uri, v2)
	require.NoError(t, err)
	assert.Len(t, set.Diagnostics, 1)
	assert.False(t, set.Reused)
	v3, err := c.Change(ctxT(t, 10*time.Second), uri, lsp.TextChange{Text: "fine"})
	require.NoError(t, err)
	set, err = c.Diagnostics(ctxT(t, 30*time.Second), uri, v3)
	require.NoError(t, err, "the server publishes nothing for a text it has checked")
	assert.True(t, set.Reused)
	assert.Equal(t, v3, set.Version)
	assert.Empty(t, set.Diagnostics)
	v4, err := c.Change(ctxT(t, 10*time.Second), uri, lsp.TextChange{Text: "an ERROR"})
	require.NoError(t, err)
	set, err = c.Diagnostics(ctxT(t, 30*time.Second), uri, v4)
	require.NoError(t, err)
	assert.True(t, set.Reused)
	assert.Len(t, set.Diagnostics, 1)

	// Another document changed since: its text may change this one's diagnostics, so the
	// old answer is not reused and the client waits for the server.
	_, err = c.Open(ctxT(t, 10*time.Second), other, "plaintext", "other")
	require.NoError(t, err)
	v5, err := c.Change(ctxT(t, 10*time.Second), uri, lsp.TextChange{Text: "fine"})
	require.NoError(t, err)
	_, err = c.Diagnostics(ctxT(t, 500*time.Millisecond), uri, v5)
	assert.ErrorIs(t, err, context.DeadlineExceeded, "nothing to answer from: the server stays silent")
	require.NoError(t, c.Close())
}
