package framing

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"
)

// DefaultMaxSize is the body cap of a Reader made with max <= 0.
const DefaultMaxSize = 64 << 20

const (
	maxLine   = 4096     // longest header line (the bufio buffer)
	maxHeader = 16 << 10 // all header lines of one frame together
	firstRead = 1 << 20  // body buffer allocated up front; larger bodies grow as bytes arrive
	oneWrite  = 64 << 10 // bodies up to this size go out in one write with their header
	quoteMax  = 64       // bytes of a bad header line quoted in an error
	headerKey = "Content-Length"
)

var (
	// ErrTooLarge is wrapped by *TooLargeError.
	ErrTooLarge = errors.New("frame too large")
	// ErrMalformed is wrapped by every error about bytes that are not a whole frame.
	ErrMalformed = errors.New("malformed frame")
)

// TooLargeError is a frame whose Content-Length exceeds the Reader's cap.
type TooLargeError struct {
	Size int64 // the announced Content-Length
	Max  int64 // the cap
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("framing: frame of %d bytes exceeds the cap of %d bytes", e.Size, e.Max)
}

// Is reports whether target is ErrTooLarge.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }

// MalformedError says why the bytes read are not a frame.
type MalformedError struct {
	Reason string
	Err    error // io.ErrUnexpectedEOF when the input ended inside a frame, else nil
}

func (e *MalformedError) Error() string {
	s := "framing: malformed frame: " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns ErrMalformed and the cause, so errors.Is matches both.
func (e *MalformedError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrMalformed}
	}
	return []error{ErrMalformed, e.Err}
}

func malformed(format string, args ...any) error {
	return &MalformedError{Reason: fmt.Sprintf(format, args...)}
}

func truncated(format string, args ...any) error {
	return &MalformedError{Reason: fmt.Sprintf(format, args...), Err: io.ErrUnexpectedEOF}
}

// Reader reads frames from a byte stream. It is not safe for concurrent use.
type Reader struct {
	br  *bufio.Reader
	max int64
	err error // came with the last bytes of the previous frame; every later call returns it
}

// NewReader returns a Reader whose bodies may be at most max bytes (DefaultMaxSize when max
// <= 0).
func NewReader(r io.Reader, max int64) *Reader {
	if max <= 0 {
		max = DefaultMaxSize
	}
	return &Reader{br: bufio.NewReaderSize(r, maxLine), max: max}
}

// Max is the body cap.
func (r *Reader) Max() int64 { return r.max }

// ReadMessage returns the body of the next frame. It returns io.EOF when the input ends
// between frames, a *TooLargeError for a frame over the cap, an error wrapping ErrMalformed
// for anything else that is not a frame, and the underlying reader's error as is. A frame whose
// last bytes come with an error (io.EOF or another) is returned whole; the next call returns
// that error.
func (r *Reader) ReadMessage() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	length, err := r.readHeader()
	if err != nil {
		return nil, err
	}
	if length > r.max {
		return nil, &TooLargeError{Size: length, Max: r.max}
	}
	body := make([]byte, 0, min(length, firstRead))
	for int64(len(body)) < length {
		if len(body) == cap(body) { // grow as bytes arrive, not as the header promises
			body = slices.Grow(body, int(min(length, 2*int64(cap(body))))-len(body))
		}
		n, err := r.br.Read(body[len(body):min(int64(cap(body)), length)])
		body = body[:len(body)+n]
		switch {
		case err == nil:
		case int64(len(body)) == length:
			// The frame's last bytes came with err, as an io.Reader may return them: the
			// frame is whole and err is the next call's. bufio.Reader.Read returns an error
			// only with its buffer empty, so no bytes are left behind.
			r.err = err
		case err == io.EOF:
			return nil, truncated("body ended after %d of %d bytes", len(body), length)
		default:
			return nil, err
		}
	}
	return body, nil
}

// readHeader reads header lines up to the empty line and returns the Content-Length.
func (r *Reader) readHeader() (int64, error) {
	length, total := int64(-1), 0
	for first := true; ; first = false {
		line, err := r.br.ReadSlice('\n')
		total += len(line)
		switch {
		case err == io.EOF && first && len(line) == 0:
			return 0, io.EOF
		case err == io.EOF:
			return 0, truncated("input ended inside the header")
		case err == bufio.ErrBufferFull:
			return 0, malformed("header line longer than %d bytes: %s", maxLine, quote(line))
		case err != nil:
			return 0, err
		case total > maxHeader:
			return 0, malformed("header longer than %d bytes", maxHeader)
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(line) == 0 {
			if length < 0 {
				return 0, malformed("no %s header", headerKey)
			}
			return length, nil
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return 0, malformed("header line without a colon: %s", quote(line))
		}
		if !bytes.EqualFold(bytes.TrimSpace(name), []byte(headerKey)) {
			continue // Content-Type and anything else: ignored
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(value)), 10, 64)
		switch {
		case err != nil || n < 0:
			return 0, malformed("bad %s value %s", headerKey, quote(value))
		case length >= 0 && n != length:
			return 0, malformed("two different %s headers (%d and %d)", headerKey, length, n)
		}
		length = n
	}
}

func quote(b []byte) string {
	if len(b) > quoteMax {
		return strconv.Quote(string(b[:quoteMax])) + "..."
	}
	return strconv.Quote(string(b))
}

// Writer writes frames. It is safe for concurrent use: frames never interleave.
type Writer struct {
	mu sync.Mutex
	w  io.Writer
}

// NewWriter returns a Writer on w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// WriteMessage writes one frame with body. A small frame goes out in one Write call.
func (w *Writer) WriteMessage(body []byte) error {
	hdr := make([]byte, 0, 32+min(len(body), oneWrite))
	hdr = strconv.AppendInt(append(hdr, headerKey+": "...), int64(len(body)), 10)
	hdr = append(hdr, "\r\n\r\n"...)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(body) <= oneWrite {
		_, err := w.w.Write(append(hdr, body...))
		return err
	}
	if _, err := w.w.Write(hdr); err != nil {
		return err
	}
	_, err := w.w.Write(body)
	return err
}
