//go:build unix

package lsp_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/lsp"
	"github.com/subkit/subkit/subprocess"
)

// TestReadDocumentReadsOnlyRegularFiles: what a confined program may have put at a path of the
// workspace is not read: a symbolic link to a file outside (a secret), a FIFO no one writes
// (ReadDocument returns at once), a directory; nor more than the cap of a regular file. The
// server gets none of it.
func TestReadDocumentReadsOnlyRegularFiles(t *testing.T) {
	c := newEnv(t).start(t, lsp.Config{MaxFrameBytes: 1 << 20})
	dir := c.Root()
	secret := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(secret, []byte("SECRET"), 0o600))
	require.NoError(t, os.Symlink(secret, filepath.Join(dir, "link.txt")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo.txt"), 0o600))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub.txt"), 0o700))
	for _, name := range []string{"link.txt", "fifo.txt", "sub.txt"} {
		done := make(chan error, 1)
		go func() {
			_, err := openFile(ctxT(t, 10*time.Second), c, name)
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(time.Minute): // only an open that waits for a FIFO's writer hangs
			t.Fatalf("ReadDocument(%s) did not return", name)
		}
		assert.ErrorIs(t, err, lsp.ErrNotRegular, name)
		_, ok := c.Document(lsp.FileURI(filepath.Join(dir, name)))
		assert.False(t, ok, "%s is not opened", name)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.txt"), make([]byte, 1<<20+1), 0o600))
	_, err := lsp.ReadDocument(filepath.Join(dir, "big.txt"), 1<<20)
	assert.ErrorContains(t, err, "larger than 1048576 bytes")
	assert.ErrorIs(t, err, subprocess.ErrLimit)

	writeFile(t, dir, "plain.txt", "text")
	uri, err := openFile(ctxT(t, 10*time.Second), c, "plain.txt")
	require.NoError(t, err)
	text, _, open := serverText(t, c, uri)
	assert.True(t, open)
	assert.Equal(t, "text", text)

	data, err := lsp.ReadDocument(secret, 0)
	require.NoError(t, err, "a regular file named by its own path")
	assert.Equal(t, "SECRET", string(data))
}
