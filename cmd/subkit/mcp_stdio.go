package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subkit/subkit/internal/done"
)

// mcpMaxMessage is the largest JSON-RPC message the server reads: one line over stdio, one
// request body over HTTP. A larger one is refused with an error that says this limit.
const mcpMaxMessage = 16 << 20

// mcpStdioLinger bounds how long, once stdin has ended, the server waits for the answers it
// still owes (the calls in flight are cancelled then, so they answer at once) before it ends
// the connection.
const mcpStdioLinger = time.Second

// stdioConn is the server's connection over stdin and stdout: newline-delimited JSON-RPC, as
// the SDK's IOTransport reads it, with a framing layer of its own in front, so that bad
// traffic is answered and never ends the connection:
//
//   - a line that is not JSON (a truncated one included) gets a -32700 parse error;
//   - a JSON-RPC batch, a message that is not a JSON-RPC object, and a request whose id is
//     still in use by a request not yet answered get -32600 invalid request;
//   - a line longer than mcpMaxMessage is skipped without being kept, and refused with a
//     -32600 that says the limit, under the request's id when it can be seen at either end.
//
// Only well-formed messages reach the SDK. At the end of stdin (or on a failed write to
// stdout) the client is gone: onGone is called at once (the server cancels every call in
// flight), the answers still owed are written as they come, for at most mcpStdioLinger,
// and then Read reports the end.
type stdioConn struct {
	out    io.Writer
	onGone func()

	incoming chan jsonrpc.Message
	ended    chan struct{} // closed once stdin has ended and the owed answers are written
	closed   chan struct{}

	closeOnce sync.Once
	goneOnce  sync.Once
	writeMu   sync.Mutex

	mu       sync.Mutex
	pending  map[jsonrpc.ID]bool // requests read and not yet answered
	answered chan struct{}       // closed and replaced when pending shrinks
	left     bool                // the client is gone: stdin ended or stdout failed
}

// newStdioConn starts reading in. The reading goroutine ends with in (a read of stdin cannot
// be interrupted); it hands nothing on once the connection is closed.
func newStdioConn(in io.Reader, out io.Writer, onGone func()) *stdioConn {
	c := &stdioConn{out: out, onGone: onGone, incoming: make(chan jsonrpc.Message), ended: make(chan struct{}),
		closed: make(chan struct{}), pending: map[jsonrpc.ID]bool{}, answered: make(chan struct{})}
	go c.readLoop(in)
	return c
}

// Connect makes c the transport of a server's one session.
func (c *stdioConn) Connect(context.Context) (mcp.Connection, error) { return c, nil }

func (c *stdioConn) SessionID() string { return "" }

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case msg := <-c.incoming:
		return msg, nil
	case <-c.ended:
		return nil, io.EOF
	case <-c.closed:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding a JSON-RPC message: %w", err)
	}
	err = c.writeLine(data)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		if c.pending[resp.ID] {
			delete(c.pending, resp.ID)
			close(c.answered)
			c.answered = make(chan struct{})
		}
		c.mu.Unlock()
	}
	return err
}

func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// clientLeft reports whether the client went away (stdin ended, or stdout failed).
func (c *stdioConn) clientLeft() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.left
}

// gone records that the client has left and tells the server, once.
func (c *stdioConn) gone() {
	c.goneOnce.Do(func() {
		c.mu.Lock()
		c.left = true
		c.mu.Unlock()
		if c.onGone != nil {
			c.onGone()
		}
	})
}

// writeLine writes one message and its newline. A failed write means the client is gone.
func (c *stdioConn) writeLine(data []byte) error {
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.out.Write(append(data, '\n'))
	if err != nil {
		c.gone()
		// The end of the connection, as the end of stdin is: the session ends without an error.
		return fmt.Errorf("writing to stdout, the client has gone: %w (%w)", err, io.EOF)
	}
	return nil
}

func (c *stdioConn) readLoop(in io.Reader) {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		l, err := readLine(r, mcpMaxMessage)
		if !c.handleLine(l) {
			return // closed
		}
		if err != nil {
			break // io.EOF, or a failed read: either way nothing more comes
		}
	}
	c.gone()
	c.linger()
	close(c.ended)
}

// linger waits until every request read has been answered, the connection is closed, or
// mcpStdioLinger has passed.
func (c *stdioConn) linger() {
	timer := time.NewTimer(mcpStdioLinger)
	defer timer.Stop()
	for {
		c.mu.Lock()
		left, answered := len(c.pending), c.answered
		c.mu.Unlock()
		if left == 0 {
			return
		}
		select {
		case <-answered:
		case <-timer.C:
			return
		case <-c.closed:
			return
		}
	}
}

// rawLine is one line of input: its bytes, or, past the limit, only its size and its two ends.
type rawLine struct {
	data       []byte
	size       int64
	over       bool
	head, tail []byte
}

// lineEnd is how much of each end of an oversized line is kept, to find its id in.
const lineEnd = 4 << 10

// readLine reads up to and including the next newline, keeping at most limit bytes of it.
func readLine(r *bufio.Reader, limit int) (rawLine, error) {
	var l rawLine
	for {
		chunk, err := r.ReadSlice('\n')
		l.size += int64(len(chunk))
		switch {
		case !l.over && len(l.data)+len(chunk) <= limit+1: // the newline does not count
			l.data = append(l.data, chunk...)
		case !l.over:
			l.over = true
			head := l.data
			if len(head) < lineEnd {
				head = append(head, chunk[:min(len(chunk), lineEnd-len(head))]...)
			}
			l.head = bytes.Clone(head[:min(len(head), lineEnd)])
			l.tail = bytes.Clone(l.data[max(0, len(l.data)-lineEnd):])
			l.data = nil
			fallthrough
		default:
			l.tail = append(l.tail, chunk...)
			if len(l.tail) > 2*lineEnd {
				l.tail = append(l.tail[:0], l.tail[len(l.tail)-lineEnd:]...)
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			if len(l.tail) > lineEnd {
				l.tail = l.tail[len(l.tail)-lineEnd:]
			}
			return l, err
		}
	}
}

// handleLine answers a malformed line or hands a message on; it reports false once the
// connection is closed.
func (c *stdioConn) handleLine(l rawLine) bool {
	if l.over {
		return c.refuse(sniffID(l.head, l.tail), jsonrpc.CodeInvalidRequest, fmt.Sprintf(
			"invalid request: a message of %d bytes is over the limit of %d bytes (16 MiB) of one message; it was not read "+
				"and nothing of it ran: pass large inputs through files", l.size, mcpMaxMessage))
	}
	line := bytes.TrimSpace(l.data)
	if len(line) == 0 {
		return true
	}
	if err := json.Unmarshal(line, new(json.RawMessage)); err != nil {
		return c.refuse(nil, jsonrpc.CodeParseError, fmt.Sprintf("parse error: a line of %d bytes is not JSON (%v); "+
			"each message is one JSON-RPC object on a line of its own", len(line), err))
	}
	switch line[0] {
	case '[':
		return c.refuseBatch(line)
	case '{':
	default:
		return c.refuse(nil, jsonrpc.CodeInvalidRequest, "invalid request: a JSON-RPC message is a JSON object")
	}
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		return c.refuse(rawID(line), jsonrpc.CodeInvalidRequest, fmt.Sprintf("invalid request: %v", err))
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		c.mu.Lock()
		dup := c.pending[req.ID]
		if !dup {
			c.pending[req.ID] = true
		}
		c.mu.Unlock()
		if dup {
			return c.refuse(rawID(line), jsonrpc.CodeInvalidRequest, fmt.Sprintf(
				"invalid request: id %s is in use by a request not answered yet; nothing ran: give each request an id of its own", rawID(line)))
		}
	}
	select {
	case c.incoming <- msg:
		return true
	case <-c.closed:
		return false
	}
}

// refuseBatch answers a JSON-RPC batch: an error for each request in it that has an id, or
// one error when none has.
func (c *stdioConn) refuseBatch(line []byte) bool {
	const why = "invalid request: JSON-RPC batches are not accepted (MCP 2025-06-18 removed them); nothing in it ran: " +
		"send each message on a line of its own"
	var elems []json.RawMessage
	json.Unmarshal(line, &elems) // valid JSON starting with '[': an array
	var errs []json.RawMessage
	for _, e := range elems {
		if id := rawID(e); id != nil {
			errs = append(errs, errorResponse(id, jsonrpc.CodeInvalidRequest, why))
		}
	}
	if len(errs) == 0 {
		return c.refuse(nil, jsonrpc.CodeInvalidRequest, why)
	}
	data, _ := json.Marshal(errs) // raw messages that are valid JSON
	return c.send(data)
}

// refuse writes an error response with id (nil: null).
func (c *stdioConn) refuse(id json.RawMessage, code int64, message string) bool {
	return c.send(errorResponse(id, code, message))
}

func (c *stdioConn) send(data []byte) bool {
	if done.Closed(c.closed) {
		return false
	}
	c.writeLine(data) // a failure has marked the client gone; reading goes on to the end of stdin
	return true
}

func errorResponse(id json.RawMessage, code int64, message string) json.RawMessage {
	if id == nil {
		id = json.RawMessage("null")
	}
	data, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: message}})
	return data
}

// rawID is the id of a JSON object, as it was sent, when it is a string or a number; else nil.
func rawID(obj []byte) json.RawMessage {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(obj, &m) != nil || !validID(m.ID) {
		return nil
	}
	return m.ID
}

func validID(id json.RawMessage) bool {
	if len(id) == 0 {
		return false
	}
	if id[0] == '"' {
		var s string
		return json.Unmarshal(id, &s) == nil
	}
	_, err := strconv.ParseFloat(string(id), 64)
	return err == nil
}

// idAtEnd matches an id that is the last member of the top-level object: how clients that
// put the id last (the TypeScript SDK) end a message.
var idAtEnd = regexp.MustCompile(`"id"\s*:\s*("(?:[^"\\]|\\.)*"|-?[0-9][0-9.eE+-]*)\s*}\s*$`)

// sniffID finds the id of a message too large to read from its two ends: among the
// top-level members before the first one that does not fit in head, or as the last member.
func sniffID(head, tail []byte) json.RawMessage {
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err == nil && t == json.Delim('{') {
		for dec.More() {
			key, err := dec.Token()
			if err != nil {
				break
			}
			var v json.RawMessage
			if dec.Decode(&v) != nil {
				break
			}
			if key == "id" && validID(v) {
				return v
			}
		}
	}
	if m := idAtEnd.FindSubmatch(tail); m != nil && validID(m[1]) {
		return m[1]
	}
	return nil
}
