package coderuntime

import (
	"bytes"

	"github.com/subkit/subkit/internal/tail"
	"github.com/subkit/subkit/internal/utf8bridge"
)

// The end marker a session driver writes to stdout and stderr after each cell, before it says
// the cell is done: markHead, the cell's nonce (nonceLen lowercase hex digits, unknown to the
// code before the cell ends), markTail. The host cuts it from the stream; what comes before it
// is the cell's output.
const (
	markHead = "\x1e\x1fsubkit-cell-end "
	markTail = "\x1f\x1e"
	nonceLen = 32
	markLen  = len(markHead) + nonceLen + len(markTail)
)

// scanner splits a stream into text and end markers, across reads. It holds back at most
// markLen-1 bytes that may be the start of a marker, until the next read tells.
type scanner struct {
	carry []byte
}

// feed passes p's text to text and each marker's nonce to mark, in stream order.
func (s *scanner) feed(p []byte, text func([]byte), mark func(nonce string)) {
	buf := p
	if len(s.carry) > 0 {
		buf = append(s.carry, p...)
		s.carry = nil
	}
	for len(buf) > 0 {
		i := bytes.Index(buf, []byte(markHead))
		if i < 0 {
			k := partialStart(buf)
			if k > 0 {
				text(buf[:k])
			}
			if k < len(buf) {
				s.carry = append([]byte(nil), buf[k:]...)
			}
			return
		}
		rest := buf[i:]
		switch {
		case len(rest) >= markLen && isMarker(rest[:markLen]):
			if i > 0 {
				text(buf[:i])
			}
			mark(string(rest[len(markHead) : len(markHead)+nonceLen]))
			buf = rest[markLen:]
		case len(rest) < markLen && isMarkerPrefix(rest):
			if i > 0 {
				text(buf[:i])
			}
			s.carry = append([]byte(nil), rest...)
			return
		default: // the head without a valid marker after it: plain text
			text(buf[:i+1])
			buf = buf[i+1:]
		}
	}
}

// flush passes on what the scanner holds back: the stream ended, or bytes were lost.
func (s *scanner) flush(text func([]byte)) {
	if len(s.carry) > 0 {
		text(s.carry)
		s.carry = nil
	}
}

// partialStart is the offset of the shortest-to-keep suffix of b that may begin a marker head,
// or len(b) when none may.
func partialStart(b []byte) int {
	for j := max(0, len(b)-len(markHead)+1); j < len(b); j++ {
		if b[j] == markHead[0] && isMarkerPrefix(b[j:]) {
			return j
		}
	}
	return len(b)
}

// isMarkerPrefix reports whether p (shorter than markLen) may be the start of a marker.
func isMarkerPrefix(p []byte) bool {
	for j, c := range p {
		switch {
		case j < len(markHead):
			if c != markHead[j] {
				return false
			}
		case j < len(markHead)+nonceLen:
			if !isHex(c) {
				return false
			}
		default:
			if c != markTail[j-len(markHead)-nonceLen] {
				return false
			}
		}
	}
	return true
}

func isMarker(p []byte) bool { return len(p) == markLen && isMarkerPrefix(p) }

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' }

// streamBuf is one stream of one cell (or what arrived between cells): a bounded tail and a
// count of every byte, lost ones included.
type streamBuf struct {
	ring  *tail.Ring
	total int64
}

func newStreamBuf(limit int) *streamBuf { return &streamBuf{ring: tail.New(limit)} }

func (b *streamBuf) write(p []byte) {
	b.ring.Write(p)
	b.total += int64(len(p))
}

// lose counts n bytes that never reached the buffer.
func (b *streamBuf) lose(n int64) { b.total += n }

// output is the buffer as an Output, its tail cut at a character boundary when truncated.
func (b *streamBuf) output() Output {
	truncated := b.total > int64(b.ring.Len())
	return Output{Tail: string(trimCut(b.ring.Bytes(), truncated)), TotalBytes: b.total, Truncated: truncated}
}

// splitUTF8 returns the longest prefix of p that does not end inside a UTF-8 character, and the
// rest (at most utf8.UTFMax-1 bytes), which the next chunk may complete.
func splitUTF8(p []byte) (whole, rest []byte) {
	n := utf8bridge.WholeLen(p)
	return p[:n], p[n:]
}
