//go:build unix

package testutil

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// CancelOnSignal returns a context cancelled once a command writes a line to the FIFO at
// fifo (give it the path, as $READY say, and have it run `echo > "$READY"` when it has
// started): a test that cancels a running command waits on that event, not on a guess at how
// long starting takes. A command that never writes leaves the context to the test's cleanup.
func CancelOnSignal(t testing.TB) (ctx context.Context, fifo string) {
	t.Helper()
	fifo = filepath.Join(t.TempDir(), "ready")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		f, err := os.Open(fifo) // blocks until the command opens it to write
		if err != nil {
			return
		}
		_, err = f.Read(make([]byte, 1))
		f.Close()
		if err == nil {
			cancel()
		}
	}()
	t.Cleanup(func() {
		// A command that never wrote: open the FIFO to write, which ends the wait above.
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		<-done
		cancel()
	})
	return ctx, fifo
}
