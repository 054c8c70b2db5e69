//go:build unix

package bash_test

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// signals is a FIFO a command writes lines to (`echo N > "$FIFO"`) when something has
// happened, so a test waits on that event instead of sleeping. The test holds it open for
// reading and writing, so a command's open never blocks and the test never reads end of file.
type signals struct {
	path string
	r    *bufio.Reader
}

func newSignals(t *testing.T) *signals {
	t.Helper()
	path := filepath.Join(t.TempDir(), "signals")
	require.NoError(t, syscall.Mkfifo(path, 0o600))
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	require.NoError(t, err)
	// A bound for a command that never writes, so a broken test fails instead of hanging.
	require.NoError(t, f.SetReadDeadline(time.Now().Add(time.Minute)))
	t.Cleanup(func() { f.Close() })
	return &signals{path: path, r: bufio.NewReader(f)}
}

// next returns the next line written.
func (s *signals) next(t *testing.T) string {
	t.Helper()
	line, err := s.r.ReadString('\n')
	require.NoError(t, err, "no signal came")
	return strings.TrimSuffix(line, "\n")
}

// waitCount reads lines until n have come.
func (s *signals) waitCount(t *testing.T, n int) {
	t.Helper()
	for range n {
		s.next(t)
	}
}

// waitAtLeast reads numbered lines until one is at least n.
func (s *signals) waitAtLeast(t *testing.T, n int) {
	t.Helper()
	for {
		i, err := strconv.Atoi(s.next(t))
		require.NoError(t, err)
		if i >= n {
			return
		}
	}
}
