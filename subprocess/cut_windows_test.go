package subprocess

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The cut on a real pipe whose write end a live process holds: os.Pipe ends have no read
// deadline on Windows, so only cancelling the read can end the pump.
func TestWindowsCutEndsABlockedPump(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	require.ErrorIs(t, r.SetReadDeadline(time.Unix(1, 0)), os.ErrNoDeadline, "the premise: no deadline on a Windows pipe")

	self, err := os.Executable()
	require.NoError(t, err)
	holder := exec.Command(self, "drip-holder")
	holder.Env = append(os.Environ(), WinHelperVar+"=drip")
	holder.Stdout = w
	require.NoError(t, holder.Start())
	require.NoError(t, w.Close())
	ended := make(chan error, 1)
	go func() { ended <- holder.Wait() }()
	defer func() {
		holder.Process.Kill()
		<-ended
		ended <- nil
	}()

	c := newCollector("stdout", Output{Disposition: Collect}, &spillPlace{parent: t.TempDir()})
	updated := c.updated() // before the pump starts, so its first bytes close it
	go c.pump(r, false)
	select {
	case <-updated:
	case <-time.After(30 * time.Second):
	}
	require.NotZero(t, c.result(false).TotalBytes, "the holder writes")

	require.NoError(t, cut(r))
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		t.Fatal("the pump is still blocked 10s after the cut")
	}
	assert.True(t, Running(holder.Process.Pid), "the holder still runs: the cut ended nothing of it")
	got := string(c.result(false).Tail)
	assert.True(t, strings.HasPrefix(got, "tick 0\n"), "what was read before the cut is kept: %q", got)
	assert.Error(t, cut(r), "a second cut finds the pump's file closed")

	// The pump closed its end once cut: the holder's next write fails, and it leaves.
	select {
	case err := <-ended:
		assert.NoError(t, err, "the holder saw its pipe end and left on its own")
		ended <- err
	case <-time.After(10 * time.Second):
		t.Fatal("the holder did not notice that nobody reads its pipe any more")
	}
}

// A cut that lands between two reads finds no read to cancel; the next read, which would
// block, is cancelled by the cut's retries.
func TestWindowsCutBetweenReads(t *testing.T) {
	for range 20 {
		r, w, err := os.Pipe()
		require.NoError(t, err)
		done := make(chan error, 1)
		cutDone := make(chan struct{})
		go func() {
			buf := make([]byte, 1)
			<-cutDone // the cut comes before the first read
			_, err := r.Read(buf)
			done <- err
		}()
		require.NoError(t, cut(r))
		close(cutDone)
		select {
		case err := <-done:
			require.Error(t, err)
			assert.False(t, errors.Is(err, os.ErrClosed), "the read was cancelled, not refused: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatal("a read started after the cut stayed blocked")
		}
		r.Close()
		w.Close()
	}
}

// The pump reads on what the pipe holds when the cut comes: only a read that would block is
// cancelled.
func TestWindowsCutKeepsWhatThePipeHolds(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer w.Close()
	_, err = w.WriteString("line one\nline two\n")
	require.NoError(t, err)
	require.NoError(t, cut(r))
	br := bufio.NewReader(r)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "line one\n", line)
	line, err = br.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "line two\n", line)
	done := make(chan error, 1)
	go func() {
		_, err := br.ReadByte()
		done <- err
	}()
	select {
	case err := <-done:
		assert.Error(t, err, "the empty pipe's read is cancelled")
	case <-time.After(10 * time.Second):
		t.Fatal("the read of the emptied pipe stayed blocked")
	}
	r.Close()
}
