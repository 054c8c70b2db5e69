package subprocess

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"sync"

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
	// outgrew the tail and stayed within SpillBytes, and, for a stream that ended before the
	// result settled, when the file was sealed without error. A stream that daemons still hold
	// (Result.PipesHeld) goes on into the file, which from then on is never removed: it holds
	// at least the TotalBytes of the snapshot, and stops growing (a complete prefix of the
	// stream) if the stream outgrows SpillBytes. The file outlives the Handle and the Service:
	// the caller removes it.
	SpillPath string
	// SpillErr says why a spill file that was wanted is missing (write or close failure), or
	// is nil. A stream larger than SpillBytes is not an error: it is Truncated without a path.
	SpillErr error
	// TeeDropped counts the bytes Output.Tee did not get, as of the snapshot: chunks that
	// found its queue full, and every chunk after it failed (TeeErr).
	TeeDropped int64
	TeeErr     error // the error Output.Tee's Write returned, after which it got nothing more
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

// spillPlace creates the Service's private spill directory lazily, and files in it. A failure
// to make the directory is not remembered: the next stream that needs a spill file tries again.
type spillPlace struct {
	parent string // directory in which the 0700 spill directory is made
	mu     sync.Mutex
	dir    string
}

func (p *spillPlace) create(stream string) (*os.File, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for try := 0; ; try++ {
		if p.dir == "" {
			dir, err := os.MkdirTemp(p.parent, "subkit-spill-") // 0700
			if err != nil {
				return nil, err
			}
			p.dir = dir
		}
		f, err := os.CreateTemp(p.dir, stream+"-*.log") // 0600, O_EXCL, random name
		if errors.Is(err, fs.ErrNotExist) && try == 0 {
			p.dir = "" // a retention sweep removed the emptied directory: make a new one
			continue
		}
		return f, err
	}
}

// path is the directory, or "" while none has been needed.
func (p *spillPlace) path() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dir
}

// collector keeps the tail of one output stream and, optionally, the whole stream in a spill
// file. The pump goroutine writes; any goroutine reads.
//
// A stream may outlive the result (a daemon still writes to it): the pump goes on until end of
// file or until it is cut (Terminate, Close), and the bytes go on into the tail and the spill.
// Once the result has published the spill file's path, the file is never removed: a stream that
// then outgrows SpillBytes stops growing the file, which keeps a complete prefix of the stream.
type collector struct {
	name     string
	place    *spillPlace
	spillCap int64

	mu        sync.Mutex
	ring      *tail.Ring
	spill     *os.File // open while the stream runs and the spill is complete
	spillPath string   // set while a spill exists (open or sealed)
	spillLen  int64    // bytes the spill file holds: the stream's first spillLen bytes
	spillErr  error
	wantSpill bool          // spill not yet created and not given up
	published bool          // a result has named the spill file: it is kept whatever happens next
	ended     bool          // the pump finished
	wake      chan struct{} // closed on the next write or at the end; nil until asked for
	tee       *tee          // Output.Tee, or nil

	done chan struct{} // closed when the pump returns
}

func newCollector(name string, o Output, place *spillPlace) *collector {
	tb := o.TailBytes
	if tb == 0 {
		tb = DefaultTailBytes
	}
	c := &collector{
		name: name, place: place, spillCap: o.SpillBytes, wantSpill: o.SpillBytes > 0,
		ring: tail.New(tb), done: make(chan struct{}),
	}
	if o.Tee != nil {
		c.tee = newTee(o.Tee, o.TeeBuffer)
	}
	return c
}

// Read buffer of a pump: it starts small and grows, with the pipe, for streams that fill it.
const (
	readFirst = 32 << 10
	readMax   = 1 << 20
)

// pump reads r to its end (or until cut stops it) and closes r. Any read error ends the
// stream: EOF for a pipe, EIO for a pty master whose terminal has no holder left. With text
// set, the bytes go through a UTF-8 bridge, so the stream holds whole code points. When the
// stream ends, the spill file is sealed.
func (c *collector) pump(r *os.File, text bool) {
	defer close(c.done)
	defer r.Close()
	defer c.seal()
	buf := make([]byte, readFirst)
	full := 0 // consecutive reads that filled buf
	var bridge *utf8bridge.Bridge
	var conv []byte
	if text {
		bridge = new(utf8bridge.Bridge)
	}
	for {
		n, err := r.Read(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// Cut: what the pipe already holds is still read, without waiting for more.
			n, err = readNow(r, buf)
		}
		if n > 0 {
			chunk := buf[:n]
			if bridge != nil {
				conv = bridge.Feed(conv[:0], chunk)
				chunk = conv
			}
			c.write(chunk)
			if c.tee != nil {
				c.tee.push(chunk) // outside the lock: it may wait for room
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
			if c.tee != nil {
				c.tee.close()
			}
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
			if c.published {
				c.closeSpill() // the file keeps the stream's first spillLen bytes
			} else {
				c.dropSpill(nil)
			}
		} else if _, err := c.spill.Write(p); err != nil {
			c.dropSpill(fmt.Errorf("write spill file: %w", err))
		} else {
			c.spillLen = total
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
		return
	}
	c.spillLen = c.ring.Total()
}

// dropSpill gives up the spill file, which would now be incomplete. A published file is
// closed and kept instead.
func (c *collector) dropSpill(why error) {
	if c.published {
		c.closeSpill()
		c.spillErr = why
		return
	}
	c.spill.Close()
	os.Remove(c.spillPath)
	c.spill, c.spillPath, c.spillLen, c.spillErr = nil, "", 0, why
}

// closeSpill closes a published spill file that will not grow any more.
func (c *collector) closeSpill() {
	if err := c.spill.Close(); err != nil && c.spillErr == nil {
		c.spillErr = fmt.Errorf("close spill file: %w", err)
	}
	c.spill = nil
}

// cutOutput makes the pump blocked on r return once it has read what r holds (see cut, per
// OS), and logs why it could not, unless the pump had closed r already or r has no deadline by
// design (a blocking pty master on macOS, whose read ends when the terminal's last holder goes).
func (s *Service) cutOutput(r *os.File) {
	if r == nil {
		return
	}
	err := cut(r)
	switch {
	case err == nil, errors.Is(err, os.ErrClosed), errors.Is(err, os.ErrNoDeadline):
	case strings.HasSuffix(err.Error(), "use of closed file"):
		// The pump closed r first: a deadline on a closed file gives internal/poll's
		// ErrFileClosing, which os does not turn into os.ErrClosed.
	default:
		s.log.Warn("output not cut", "file", r.Name(), "err", err)
	}
}

// seal closes the spill file once the stream has ended; when that fails before a result has
// named the file, the path is not published.
func (c *collector) seal() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.spill == nil {
		return
	}
	if c.published {
		c.closeSpill()
		return
	}
	if err := c.spill.Close(); err != nil {
		os.Remove(c.spillPath)
		c.spillPath, c.spillLen, c.spillErr = "", 0, fmt.Errorf("close spill file: %w", err)
	}
	c.spill = nil
}

// result is the stream as it stands; with publish set, the spill file it names is kept from
// now on, whatever the stream does next.
func (c *collector) result(publish bool) StreamResult {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.published = c.published || publish && c.spillPath != ""
	r := StreamResult{
		Tail:       c.ring.Bytes(),
		TotalBytes: c.ring.Total(),
		Truncated:  c.ring.Total() > int64(c.ring.Len()),
		SpillPath:  c.spillPath,
		SpillErr:   c.spillErr,
	}
	if c.tee != nil {
		r.TeeDropped, r.TeeErr = c.tee.stats()
	}
	return r
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

// read serves an offset read; max <= 0 means everything available. Bytes older than the tail
// are read from the spill file outside the lock, so a slow disk never stalls the pump.
func (c *collector) read(from int64, max int) (Delta, error) {
	c.mu.Lock()
	total := c.ring.Total()
	if from < 0 || from > total {
		c.mu.Unlock()
		return Delta{}, invalid("read output", c.name,
			fmt.Sprintf("offset %d is outside the stream [0, %d]", from, total))
	}
	if from >= c.ring.Start() || from >= c.spillLen || c.spillPath == "" {
		defer c.mu.Unlock()
		return c.fromRing(from, max, total), nil
	}
	path, end, ended := c.spillPath, min(total, c.spillLen), c.ended
	c.mu.Unlock()

	if data, err := readSpill(path, from, end, max); err == nil {
		d := Delta{From: from, Data: data, Total: total}
		d.Next = d.From + int64(len(data))
		d.Done = ended && d.Next == total
		return d, nil
	}
	c.mu.Lock() // the file went away: serve what the tail has
	defer c.mu.Unlock()
	return c.fromRing(from, max, total), nil
}

// fromRing serves a read from the tail. Called with c.mu held.
func (c *collector) fromRing(from int64, max int, total int64) Delta {
	d := Delta{Total: total}
	d.Data, d.From = c.ring.ReadAt(from, max)
	d.Dropped = d.From - from
	d.Next = d.From + int64(len(d.Data))
	d.Done = c.ended && d.Next == total
	return d
}

// readSpill reads [from, end) of the spill file at path, capped at max bytes.
func readSpill(path string, from, end int64, max int) ([]byte, error) {
	n := end - from
	if max > 0 && n > int64(max) {
		n = int64(max)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, from); err != nil {
		return nil, err
	}
	return buf, nil
}
