//go:build unix

package testutil

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// signalsBound bounds the wait for a command that never writes, so that a broken test fails
// instead of hanging; generous, for a loaded machine.
const signalsBound = 3 * time.Minute

// Signals is a FIFO a command writes lines to (`echo N > "$FIFO"`) when something has
// happened, so that a test waits on that event instead of sleeping or polling. The test holds
// it open for reading and writing: a command's open never blocks, and the test never reads
// end of file.
type Signals struct {
	Path string // the FIFO, for the command's environment
	r    *bufio.Reader
}

// NewSignals makes the FIFO in a temp dir of t, closed at t's cleanup.
func NewSignals(t testing.TB) *Signals {
	t.Helper()
	path := filepath.Join(t.TempDir(), "signals")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.SetReadDeadline(time.Now().Add(signalsBound)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &Signals{Path: path, r: bufio.NewReader(f)}
}

// Next waits for the next line and returns it without its newline.
func (s *Signals) Next(t testing.TB) string {
	t.Helper()
	line, err := s.r.ReadString('\n')
	if err != nil {
		t.Fatalf("no signal came on %s: %v", s.Path, err)
	}
	return strings.TrimSuffix(line, "\n")
}

// WaitCount waits for n lines.
func (s *Signals) WaitCount(t testing.TB, n int) {
	t.Helper()
	for range n {
		s.Next(t)
	}
}

// WaitAtLeast reads numbered lines until one is at least n.
func (s *Signals) WaitAtLeast(t testing.TB, n int) {
	t.Helper()
	for {
		line := s.Next(t)
		i, err := strconv.Atoi(line)
		if err != nil {
			t.Fatalf("signal %q on %s is not a number", line, s.Path)
		}
		if i >= n {
			return
		}
	}
}
