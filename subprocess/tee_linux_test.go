package subprocess_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/subprocess"
)

// syncBuffer is a bytes.Buffer safe for the tee goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

// stuckWriter blocks every Write until released, then counts.
type stuckWriter struct {
	release chan struct{}
	mu      sync.Mutex
	n       int64
}

func (w *stuckWriter) Write(p []byte) (int, error) {
	<-w.release
	w.mu.Lock()
	defer w.mu.Unlock()
	w.n += int64(len(p))
	return len(p), nil
}

func (w *stuckWriter) written() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// failingWriter fails its first Write.
type failingWriter struct{ calls int }

func (w *failingWriter) Write(p []byte) (int, error) {
	w.calls++
	return 0, errors.New("sink broke")
}

func TestTee(t *testing.T) {
	svc := newService(t, subprocess.Config{})

	// A Writer gets the whole stream, in order, while the tail and the spill are kept. Its
	// queue holds the whole stream (1.3 MB), so that on a loaded machine, where the Writer's
	// goroutine may not run while seq writes, nothing is dropped.
	var buf syncBuffer
	spec := sh(`seq 1 200000`)
	spec.Stdout = subprocess.Output{TailBytes: 1000, SpillBytes: 10 << 20, Tee: &buf, TeeBuffer: 4 << 20}
	res := run(t, svc, spec)
	spilled, err := os.ReadFile(res.Stdout.SpillPath)
	require.NoError(t, err)
	assert.Equal(t, int64(len(spilled)), res.Stdout.TotalBytes)
	assert.True(t, bytes.Equal(spilled, buf.Bytes()), "the Tee got the stream as it was")
	assert.Zero(t, res.Stdout.TeeDropped)
	assert.NoError(t, res.Stdout.TeeErr)
	os.Remove(res.Stdout.SpillPath)

	// A stuck Writer never stalls the child: it writes 8 MiB and exits while the Writer has
	// taken nothing; what did not fit the queue is counted, the rest arrives once it moves.
	stuck := &stuckWriter{release: make(chan struct{})}
	spec = sh(`head -c 8388608 /dev/zero`)
	spec.DrainGrace = 100 * time.Millisecond
	spec.Stdout = subprocess.Output{Tee: stuck, TeeBuffer: 64 << 10}
	h, err := svc.Spawn(context.Background(), spec)
	require.NoError(t, err)
	res, err = h.Wait(ctxT(t, 20*time.Second))
	require.NoError(t, err, "the child was stalled by its Tee")
	assert.Equal(t, int64(8<<20), res.Stdout.TotalBytes)
	assert.Zero(t, stuck.written())
	assert.GreaterOrEqual(t, res.Stdout.TeeDropped, int64(8<<20-64<<10), "what found the queue full is counted")
	close(stuck.release)
	require.Eventually(t, func() bool { return stuck.written() == 8<<20-res.Stdout.TeeDropped }, 10*time.Second, time.Millisecond,
		"the queued bytes arrive: %d of %d", stuck.written(), 8<<20-res.Stdout.TeeDropped)
	require.NoError(t, h.Close())

	// A failing Writer gets nothing after its error; the rest is counted.
	fail := &failingWriter{}
	spec = sh(`for i in 1 2 3; do echo chunk$i; sleep 0.05; done`)
	spec.Stdout = subprocess.Output{Tee: fail}
	res = run(t, svc, spec)
	assert.EqualError(t, res.Stdout.TeeErr, "sink broke")
	assert.Equal(t, res.Stdout.TotalBytes, res.Stdout.TeeDropped, "every byte it did not take is counted")
	assert.Equal(t, 1, fail.calls, "nothing is written after the error")

	for _, o := range []subprocess.Output{
		{Tee: &buf, TeeBuffer: -1},
		{Disposition: subprocess.Discard, Tee: &buf},
	} {
		spec := sh(`true`)
		spec.Stdout = o
		_, err := svc.Spawn(context.Background(), spec)
		assert.ErrorIs(t, err, subprocess.ErrInvalid, "%+v", o)
	}
}
