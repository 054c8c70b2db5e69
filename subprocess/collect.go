package subprocess

import (
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/subkit/subkit/internal/tail"
	"github.com/subkit/subkit/internal/utf8bridge"
)

// Stream names an output stream of a Handle.
type Stream int

const (
	Stdout Stream = 1
	Stderr Stream = 2
)

func (s Stream) String() string {
	switch s {
	case Stdout:
		return "stdout"
	case Stderr:
		return "stderr"
	}
	return fmt.Sprintf("Stream(%d)", int(s))
}

// StreamResult is what a collect stream kept once the handle settled.
type StreamResult struct {
	Tail       []byte // the last bytes of the stream (at most the tail size)
	TotalBytes int64  // every byte the stream produced (that was read before settlement)
	Truncated  bool   // Tail is not the whole stream
	// SpillPath is the private file holding the whole stream. It is set only when the stream
	// outgrew the tail, stayed within SpillBytes, and the file was sealed without error. The
	// file outlives the Handle and the Service: the caller removes it.
	SpillPath string
	// SpillErr says why a spill file that was wanted is missing (write or close failure), or
	// is nil. A stream larger than SpillBytes is not an error: it is Truncated without a path.
	SpillErr error
}

// Delta is the answer to an offset read: bytes of the stream in whole-stream coordinates.
type Delta struct {
	From    int64  // stream offset of Data[0]; greater than the offset asked for when bytes were dropped
	Data    []byte // the bytes read
	Next    int64  // offset to ask for next time: From + len(Data)
	Dropped int64  // bytes between the offset asked for and From that neither tail nor spill still holds
	Total   int64  // bytes the stream has produced so far
	Done    bool   // the stream has ended and Next == Total: nothing more will come
}

// spillPlace creates the per-process spill directory lazily and files in it.
type spillPlace struct {
	parent string // directory in which the 0700 per-process directory is made
	mu     sync.Mutex
	dir    string
	err    error
}

func (p *spillPlace) create(stream string) (*os.File, error) {
	p.mu.Lock()
	if p.dir == "" && p.err == nil {
		p.dir, p.err = os.MkdirTemp(p.parent, "subkit-spill-") // 0700
	}
	dir, err := p.dir, p.err
	p.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return os.CreateTemp(dir, stream+"-*.log") // 0600, O_EXCL, random name
}

// collector keeps the tail of one output stream and, optionally, the whole stream in a spill
// file. The pump goroutine writes; any goroutine reads.
type collector struct {
	name     string
	place    *spillPlace
	spillCap int64

	mu        sync.Mutex
	ring      *tail.Ring
	spill     *os.File // open while the stream runs and the spill is complete
	spillPath string   // set while a complete spill exists (open or sealed)
	spillErr  error
	wantSpill bool // spill not yet created and not given up
	ended     bool // the pump finished
	sealed    bool
	wake      chan struct{} // closed on the next write or at the end; nil until asked for

	done chan struct{} // closed when the pump returns
}

func newCollector(name string, o Output, place *spillPlace) *collector {
	tb := o.TailBytes
	if tb == 0 {
		tb = DefaultTailBytes
	}
	return &collector{
		name: name, place: place, spillCap: o.SpillBytes, wantSpill: o.SpillBytes > 0,
		ring: tail.New(tb), done: make(chan struct{}),
	}
}

// Read buffer of a pump: it starts small and grows, with the pipe, for streams that fill it.
const (
	readFirst = 32 << 10
	readMax   = 1 << 20
)

// pump reads r to its end (or until r's read deadline cuts it) and closes r. Any read error
// ends the stream: EOF for a pipe, EIO for a pty master whose terminal has no holder left.
// With text set, the bytes go through a UTF-8 bridge, so the stream holds whole code points.
func (c *collector) pump(r *os.File, text bool) {
	defer close(c.done)
	defer r.Close()
	buf := make([]byte, readFirst)
	full := 0 // consecutive reads that filled buf
	var bridge *utf8bridge.Bridge
	var conv []byte
	if text {
		bridge = new(utf8bridge.Bridge)
	}
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if bridge != nil {
				conv = bridge.Feed(conv[:0], buf[:n])
				c.write(conv)
			} else {
				c.write(buf[:n])
			}
		}
		// A stream that keeps filling the buffer is a fast one: read it in bigger gulps from a
		// bigger pipe, so it costs fewer system calls and wake-ups. Short streams never grow.
		if full = full + 1; n < len(buf) {
			full = 0
		} else if full >= 4 && len(buf) < readMax {
			buf, full = make([]byte, min(4*len(buf), readMax)), 0
			growPipe(r, readMax)
		}
		if err != nil {
			if bridge != nil {
				c.write(bridge.Flush(conv[:0]))
			}
			c.mu.Lock()
			c.ended = true
			if c.wake != nil {
				close(c.wake)
				c.wake = nil
			}
			c.mu.Unlock()
			return
		}
	}
}

func (c *collector) write(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wake != nil && len(p) > 0 {
		close(c.wake)
		c.wake = nil
	}
	total := c.ring.Total() + int64(len(p))
	if c.spill == nil && c.wantSpill && total > int64(c.ring.Limit()) {
		c.wantSpill = false
		if total <= c.spillCap {
			c.startSpill()
		}
	}
	if c.spill != nil {
		if total > c.spillCap {
			c.dropSpill(nil)
		} else if _, err := c.spill.Write(p); err != nil {
			c.dropSpill(fmt.Errorf("write spill file: %w", err))
		}
	}
	c.ring.Write(p)
}

// startSpill creates the spill file and copies the stream so far (all of it is still in the
// ring, since the stream has only now outgrown it).
func (c *collector) startSpill() {
	f, err := c.place.create(c.name)
	if err != nil {
		c.spillErr = fmt.Errorf("create spill file: %w", err)
		return
	}
	c.spill, c.spillPath = f, f.Name()
	if _, err := f.Write(c.ring.Bytes()); err != nil {
		c.dropSpill(fmt.Errorf("write spill file: %w", err))
	}
}

// dropSpill gives up the spill file, which would now be incomplete.
func (c *collector) dropSpill(why error) {
	c.spill.Close()
	os.Remove(c.spillPath)
	c.spill, c.spillPath, c.spillErr = nil, "", why
}

// cut makes a pump still blocked on r return now (descendants hold the pipe open).
func cut(r *os.File) {
	if r != nil {
		r.SetReadDeadline(time.Unix(1, 0))
	}
}

// seal closes the spill file; when that fails the path is not published.
func (c *collector) seal() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sealed = true
	if c.spill == nil {
		return
	}
	if err := c.spill.Close(); err != nil {
		os.Remove(c.spillPath)
		c.spillPath, c.spillErr = "", fmt.Errorf("close spill file: %w", err)
	}
	c.spill = nil
}

func (c *collector) result() StreamResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	return StreamResult{
		Tail:       c.ring.Bytes(),
		TotalBytes: c.ring.Total(),
		Truncated:  c.ring.Total() > int64(c.ring.Len()),
		SpillPath:  c.spillPath,
		SpillErr:   c.spillErr,
	}
}

// updated returns a channel closed when bytes arrive after the call or the stream ends.
func (c *collector) updated() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		ch := make(chan struct{})
		close(ch)
		return ch
	}
	if c.wake == nil {
		c.wake = make(chan struct{})
	}
	return c.wake
}

// read serves an offset read; max <= 0 means everything available.
func (c *collector) read(from int64, max int) (Delta, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	total := c.ring.Total()
	if from < 0 || from > total {
		return Delta{}, invalid("read output", c.name,
			fmt.Sprintf("offset %d is outside the stream [0, %d]", from, total))
	}
	d := Delta{From: from, Total: total}
	if from < c.ring.Start() && c.spillPath != "" {
		data, err := c.readSpill(from, total, max)
		if err == nil {
			d.Data = data
		} else {
			d.From = c.ring.Start() // the file went away: serve what the tail has
		}
	}
	if d.Data == nil {
		d.Data, d.From = c.ring.ReadAt(from, max)
	}
	d.Dropped = d.From - from
	d.Next = d.From + int64(len(d.Data))
	d.Done = c.ended && d.Next == total
	return d, nil
}

// readSpill reads [from, total) from the spill file, capped at max bytes. Called with c.mu held.
func (c *collector) readSpill(from, total int64, max int) ([]byte, error) {
	n := total - from
	if max > 0 && n > int64(max) {
		n = int64(max)
	}
	f := c.spill
	if f == nil { // sealed: read through the published path
		var err error
		if f, err = os.Open(c.spillPath); err != nil {
			return nil, err
		}
		defer f.Close()
	}
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, from); err != nil {
		return nil, err
	}
	return buf, nil
}
