package proctest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/subkit/subkit/internal/proctest"
)

func TestMain(m *testing.M) {
	proctest.Main()
	goleak.VerifyTestMain(m)
}

// A tree of two nodes, each with a shell below it and a node below that: the root reports
// all five processes below it with their parents and names.
func TestStart(t *testing.T) {
	tr := proctest.Start(t, "2,c1")
	require.Len(t, tr.Procs, 7)
	exe, err := os.Executable()
	require.NoError(t, err)
	count := map[string]int{}
	for pid, p := range tr.Procs {
		count[p.Name]++
		if pid == tr.Root {
			assert.Equal(t, os.Getpid(), p.PPid)
			continue
		}
		parent, ok := tr.Procs[p.PPid]
		require.True(t, ok, "the parent of %d is in the tree", pid)
		if p.Name == proctest.Shell() {
			assert.Equal(t, filepath.Base(exe), parent.Name, "a shell's parent is a node")
		}
	}
	assert.Equal(t, map[string]int{filepath.Base(exe): 5, proctest.Shell(): 2}, count)
	tr.Stop(t)
	tr.Stop(t)
}
