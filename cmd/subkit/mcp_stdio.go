package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync"
)

// stdioDrain makes a half-close of stdin mean "answer what was asked, then exit": the
// server's read of stdin returns end-of-file only once every request read before it has been
// answered on stdout (or ctx has ended). Without it, `printf REQUESTS | subkit mcp` would get
// no answer at all: the SDK ends the session at end-of-file and drops the answers in flight.
// It sees the newline-delimited JSON-RPC messages as they pass: requests (a method and an
// id) in, responses (an id, no method) out.
type stdioDrain struct {
	ctx context.Context
	in  io.Reader
	out io.Writer

	mu      sync.Mutex
	pending map[string]int // request ids read and not yet answered
	changed chan struct{}  // closed and replaced when pending shrinks
	inLine  []byte         // a partial line of each direction
	outLine []byte
}

func newStdioDrain(ctx context.Context, in io.Reader, out io.Writer) *stdioDrain {
	return &stdioDrain{ctx: ctx, in: in, out: out, pending: map[string]int{}, changed: make(chan struct{})}
}

// rpcHead is what the drain reads of a message.
type rpcHead struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

func (d *stdioDrain) Read(p []byte) (int, error) {
	n, err := d.in.Read(p)
	d.mu.Lock()
	d.inLine = scanLines(d.inLine, p[:n], d.request)
	d.mu.Unlock()
	if err == io.EOF {
		if n > 0 {
			return n, nil // the SDK must have these bytes before end-of-file is held back
		}
		d.mu.Lock()
		d.inLine = scanLines(d.inLine, []byte("\n"), d.request) // a last line without its newline
		d.mu.Unlock()
		d.wait()
	}
	return n, err
}

func (d *stdioDrain) Write(p []byte) (int, error) {
	n, err := d.out.Write(p)
	d.mu.Lock()
	d.outLine = scanLines(d.outLine, p[:n], d.response)
	d.mu.Unlock()
	return n, err
}

func (d *stdioDrain) Close() error { return nil }

// wait returns once nothing read is left unanswered, or ctx has ended.
func (d *stdioDrain) wait() {
	for {
		d.mu.Lock()
		left, changed := len(d.pending), d.changed
		d.mu.Unlock()
		if left == 0 {
			return
		}
		select {
		case <-changed:
		case <-d.ctx.Done():
			return
		}
	}
}

// request and response are called with d.mu held.
func (d *stdioDrain) request(h rpcHead) {
	if h.Method != "" && len(h.ID) > 0 && string(h.ID) != "null" {
		d.pending[string(h.ID)]++
	}
}

func (d *stdioDrain) response(h rpcHead) {
	id := string(h.ID)
	if h.Method != "" || d.pending[id] == 0 {
		return
	}
	if d.pending[id]--; d.pending[id] == 0 {
		delete(d.pending, id)
	}
	close(d.changed)
	d.changed = make(chan struct{})
}

// scanLines appends p to the partial line, calls f with the head of each complete line that
// is a JSON object, and returns the new partial line.
func scanLines(partial, p []byte, f func(rpcHead)) []byte {
	partial = append(partial, p...)
	for {
		i := bytes.IndexByte(partial, '\n')
		if i < 0 {
			break
		}
		var h rpcHead
		if json.Unmarshal(partial[:i], &h) == nil {
			f(h)
		}
		partial = partial[i+1:]
	}
	if len(partial) == 0 {
		return nil // let the buffer go
	}
	return partial
}
