//go:build unix

package bash_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/bash"
)

// put writes size bytes at root/rel, last modified age ago, making directories.
func put(t *testing.T, root, rel string, size int, age time.Duration) string {
	t.Helper()
	p := filepath.Join(root, rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
	require.NoError(t, os.WriteFile(p, make([]byte, size), 0o600))
	when := time.Now().Add(-age)
	require.NoError(t, os.Chtimes(p, when, when))
	return p
}

// tree lists the files under root (relative paths), not descending into symlinks.
func tree(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && p != root && (!d.IsDir() || d.Type()&fs.ModeSymlink != 0) {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	slices.Sort(out)
	return out
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// Sweeps go by age; only what this package made is ever touched.
func TestSpillSweepByAge(t *testing.T) {
	root := t.TempDir()
	put(t, root, "subkit-bash-dead/.lock", 0, 0)
	put(t, root, "subkit-bash-dead/subkit-spill-1/stdout-1.log", 10, 48*time.Hour)
	put(t, root, "subkit-bash-dead/subkit-spill-2/stderr-2.log", 10, time.Minute)
	put(t, root, "unrelated.log", 10, 48*time.Hour)
	put(t, root, "other/subkit-spill-3/stdout-3.log", 10, 48*time.Hour)
	put(t, root, "subkit-bash-file", 10, 48*time.Hour)
	elsewhere := t.TempDir()
	put(t, elsewhere, "subkit-spill-4/stdout-4.log", 10, 48*time.Hour)
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(root, "subkit-bash-link")))
	// A directory without a lock: taken as dead once old, as being created while young.
	put(t, root, "subkit-bash-nolock/subkit-spill-5/stdout-5.log", 10, 48*time.Hour)
	old := time.Now().Add(-time.Hour)
	require.NoError(t, os.Chtimes(filepath.Join(root, "subkit-bash-nolock"), old, old))
	put(t, root, "subkit-bash-young/subkit-spill-6/stdout-6.log", 10, 48*time.Hour)

	e, _ := newExecutor(t, bash.Config{SpillDir: root, SpillMaxAge: time.Hour})
	require.NoError(t, e.Close())
	assert.Equal(t, []string{
		"other/subkit-spill-3/stdout-3.log",
		"subkit-bash-dead/.lock",
		"subkit-bash-dead/subkit-spill-2/stderr-2.log",
		"subkit-bash-file",
		"subkit-bash-link",
		"subkit-bash-young/subkit-spill-6/stdout-6.log",
		"unrelated.log",
	}, tree(t, root))
	assert.True(t, exists(filepath.Join(elsewhere, "subkit-spill-4/stdout-4.log")), "a symlink is never followed")
}

// Over the total, the oldest files go first.
func TestSpillSweepByTotal(t *testing.T) {
	root := t.TempDir()
	put(t, root, "subkit-bash-dead/.lock", 0, 0)
	for i, age := range []time.Duration{5, 4, 3, 2, 1} {
		put(t, root, "subkit-bash-dead/subkit-spill-"+string(rune('a'+i%2))+"/f"+string(rune('0'+i))+".log", 1000, age*time.Minute)
	}
	e, _ := newExecutor(t, bash.Config{SpillDir: root, SpillMaxTotalBytes: 2500})
	require.NoError(t, e.Close())
	assert.Equal(t, []string{
		"subkit-bash-dead/.lock",
		"subkit-bash-dead/subkit-spill-a/f4.log",
		"subkit-bash-dead/subkit-spill-b/f3.log",
	}, tree(t, root))
}

func spillFiles(t *testing.T, root string) []string {
	var out []string
	for _, f := range tree(t, root) {
		if strings.HasSuffix(f, ".log") {
			out = append(out, filepath.Join(root, f))
		}
	}
	return out
}

// Neither another live executor's files nor this one's files in use are ever touched.
func TestSpillNeverTouchesFilesInUse(t *testing.T) {
	root := t.TempDir()
	tiny := bash.Config{SpillDir: root, SpillMaxTotalBytes: 1, MaxOutputBytes: 100, Grace: 200 * time.Millisecond}
	a, _ := newExecutor(t, tiny)
	p := start(t, a, "seq 1 1000; sleep 1000")
	for off := (bash.Offsets{}); off.Stdout <= 100; { // until the stream has outgrown its tail
		d, err := p.WaitOutput(ctxT(t, time.Minute), off, 0)
		require.NoError(t, err)
		off = d.Next
	}
	require.Len(t, spillFiles(t, root), 1, "the spill file is made as the stream outgrows its tail")
	bg := spillFiles(t, root)[0]
	fg := exec(t, a, bash.Request{Command: "seq 1 1000"})
	require.NotEmpty(t, fg.Stdout.SpillPath)

	// Another executor sweeping the same root keeps off a's files.
	newExecutor(t, tiny)
	assert.True(t, exists(bg))
	assert.True(t, exists(fg.Stdout.SpillPath))

	// a's own sweep takes the released foreground file, not the running one's.
	require.NoError(t, a.Sweep(context.Background()))
	assert.True(t, exists(bg))
	assert.False(t, exists(fg.Stdout.SpillPath))
	d, err := p.ReadOutput(bash.Offsets{}, 0)
	require.NoError(t, err)
	assert.Zero(t, d.Stdout.Dropped)
	assert.EqualValues(t, 3893, len(d.Stdout.Data))

	// Once the process is closed, its file may go.
	require.NoError(t, p.Close())
	require.NoError(t, a.Sweep(context.Background()))
	assert.False(t, exists(bg))
	assert.Empty(t, spillFiles(t, root))
}

// Close keeps what the policy allows, for the model to read later; a later sweep by another
// executor removes it, and its directory, only once it is older than its own executor's
// maximum age, whatever the sweeping executor's policy says.
func TestSpillOutlivesCloseUntilSwept(t *testing.T) {
	root := t.TempDir()
	a, _ := newExecutor(t, bash.Config{SpillDir: root, MaxOutputBytes: 100, SpillMaxAge: time.Minute})
	res := exec(t, a, bash.Request{Command: "seq 1 1000"})
	require.NotEmpty(t, res.Stdout.SpillPath)
	require.NoError(t, a.Close())
	data, err := os.ReadFile(res.Stdout.SpillPath)
	require.NoError(t, err)
	assert.Len(t, data, 3893)

	// A stricter executor (1 ms, 1 byte in all) sweeps: the file is younger than a minute.
	b, _ := newExecutor(t, bash.Config{SpillDir: root, SpillMaxAge: time.Millisecond, SpillMaxTotalBytes: 1})
	require.NoError(t, b.Sweep(context.Background()))
	assert.True(t, exists(res.Stdout.SpillPath), "another executor's policy never removes a file younger than its own")
	require.NoError(t, b.Close())
	assert.True(t, exists(res.Stdout.SpillPath))

	// Aged past its own executor's minute, it goes at the next sweep, even a lenient one's.
	old := time.Now().Add(-2 * time.Minute)
	require.NoError(t, os.Chtimes(res.Stdout.SpillPath, old, old))
	c, _ := newExecutor(t, bash.Config{SpillDir: root, SpillMaxAge: 24 * time.Hour})
	assert.False(t, exists(res.Stdout.SpillPath))
	require.NoError(t, c.Close())
	assert.Empty(t, tree(t, root), "every directory emptied is removed")
}

// Close sweeps too: over the total, the released files go with the executor's directory.
func TestSpillSweptOnClose(t *testing.T) {
	root := t.TempDir()
	a, _ := newExecutor(t, bash.Config{SpillDir: root, MaxOutputBytes: 100, SpillMaxTotalBytes: 1000})
	res := exec(t, a, bash.Request{Command: "seq 1 1000"})
	require.NotEmpty(t, res.Stdout.SpillPath)
	require.NoError(t, a.Sweep(context.Background()))
	assert.False(t, exists(res.Stdout.SpillPath), "released and over the total")
	small := exec(t, a, bash.Request{Command: "seq 1 300"}) // 1092 bytes: over the total alone
	require.NotEmpty(t, small.Stdout.SpillPath)
	assert.True(t, exists(small.Stdout.SpillPath))
	require.NoError(t, a.Close())
	assert.False(t, exists(small.Stdout.SpillPath))
	assert.Empty(t, tree(t, root))
}
