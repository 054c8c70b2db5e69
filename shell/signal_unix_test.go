//go:build unix

package shell

import (
	"bufio"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// signals is a FIFO a command writes a line to (`echo > "$FIFO"`) when something has
// happened, so a test waits on that event instead of polling. The test holds it open for
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

// next waits for the next line.
func (s *signals) next(t *testing.T) {
	t.Helper()
	_, err := s.r.ReadString('\n')
	require.NoError(t, err, "no signal came")
}
