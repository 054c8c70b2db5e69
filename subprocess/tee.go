package subprocess

import (
	"io"
	"sync"
	"time"
)

// DefaultTeeBuffer is how many bytes of a stream wait for a slow Output.Tee before chunks are
// dropped for it.
const DefaultTeeBuffer = 1 << 20

// TeeMaxStall is the longest a stream waits for room in its Tee's queue: once, when the Tee
// falls behind; from then on, until the queue has room again, chunks that do not fit are
// dropped at once.
const TeeMaxStall = 100 * time.Millisecond

// tee hands a collected stream's chunks, in order, to a caller's Writer from a goroutine of its
// own, so a slow or stuck Writer stalls the pump (and so the child) for at most TeeMaxStall:
// chunks wait in a queue of at most limit bytes, and a chunk that cannot get in is dropped and
// counted.
type tee struct {
	w     io.Writer
	limit int
	done  chan struct{} // closed once everything queued was written (or dropped) after close

	mu      sync.Mutex
	queue   [][]byte
	queued  int
	dropped int64
	err     error // the Writer's error: nothing is written after it
	closed  bool
	behind  bool          // the last chunk was dropped for want of room
	wake    chan struct{} // capacity 1: something was queued, or close
	room    chan struct{} // capacity 1: something was written
}

func newTee(w io.Writer, limit int) *tee {
	if limit == 0 {
		limit = DefaultTeeBuffer
	}
	t := &tee{w: w, limit: limit, done: make(chan struct{}), wake: make(chan struct{}, 1), room: make(chan struct{}, 1)}
	go t.run()
	return t
}

// push queues a copy of p, waiting up to TeeMaxStall for room unless the Tee is behind
// already; it counts p dropped when it cannot get in or the Writer has failed. The pump calls
// it, outside the collector's lock.
func (t *tee) push(p []byte) {
	if len(p) == 0 {
		return
	}
	var deadline <-chan time.Time
	for {
		t.mu.Lock()
		fits := t.queued+len(p) <= t.limit || t.queued == 0 // a chunk larger than the queue goes alone
		if t.err == nil && !t.closed && fits {
			t.queue = append(t.queue, append([]byte(nil), p...))
			t.queued += len(p)
			t.behind = false
			signal(t.wake)
			t.mu.Unlock()
			return
		}
		if t.err != nil || t.closed || t.behind {
			t.dropped += int64(len(p))
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
		if deadline == nil {
			timer := time.NewTimer(TeeMaxStall)
			defer timer.Stop()
			deadline = timer.C
		}
		select {
		case <-t.room:
		case <-deadline:
			t.mu.Lock()
			t.behind = true
			t.mu.Unlock()
		}
	}
}

// close says the stream has ended: the tee writes what is queued and stops.
func (t *tee) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	signal(t.wake)
}

// signal wakes the one waiter of a channel of capacity 1, now or when it comes to wait.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (t *tee) run() {
	defer close(t.done)
	for {
		t.mu.Lock()
		batch, closed := t.queue, t.closed
		t.queue = nil
		t.mu.Unlock()
		for i, p := range batch {
			n, err := t.w.Write(p)
			t.mu.Lock()
			t.queued -= len(p)
			if err == nil && n < len(p) {
				err = io.ErrShortWrite
			}
			if err != nil {
				t.err = err
				t.dropped += int64(len(p) - max(0, min(n, len(p))))
				for _, rest := range append(batch[i+1:], t.queue...) {
					t.dropped += int64(len(rest))
				}
				t.queue, t.queued = nil, 0
				t.mu.Unlock()
				signal(t.room)
				return
			}
			t.mu.Unlock()
			signal(t.room)
		}
		if len(batch) == 0 {
			if closed {
				return
			}
			<-t.wake
		}
	}
}

// stats is what was dropped so far and the Writer's error.
func (t *tee) stats() (dropped int64, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dropped, t.err
}
