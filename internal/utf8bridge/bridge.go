package utf8bridge

import "unicode/utf8"

// Bridge carries the incomplete tail of the last chunk. The zero value is ready to use. It is
// not safe for concurrent use.
type Bridge struct {
	held [utf8.UTFMax]byte
	n    int
}

var replacement = []byte(string(utf8.RuneError))

// Feed appends the text of p to dst and returns it. Only whole code points are appended; an
// incomplete sequence at the end of p is held for the next call.
func (b *Bridge) Feed(dst, p []byte) []byte {
	if b.n > 0 {
		// Complete the held sequence with as few bytes of p as it needs.
		need := min(utf8.UTFMax-b.n, len(p))
		var joined [2 * utf8.UTFMax]byte
		j := copy(joined[:], b.held[:b.n])
		j += copy(joined[j:], p[:need])
		if !utf8.FullRune(joined[:j]) {
			b.n = copy(b.held[:], joined[:j])
			return dst
		}
		_, size := utf8.DecodeRune(joined[:j])
		if r, _ := utf8.DecodeRune(joined[:j]); r == utf8.RuneError && size == 1 {
			dst = append(dst, replacement...)
		} else {
			dst = append(dst, joined[:size]...)
		}
		// Bytes of joined past the first rune that came from p are re-read from p; bytes that
		// were held are re-fed (only the first held byte is consumed by an error).
		consumed := size - b.n
		if consumed < 0 {
			rest := append([]byte(nil), joined[size:b.n]...)
			b.n = 0
			dst = b.Feed(dst, rest)
			return b.Feed(dst, p)
		}
		b.n = 0
		p = p[consumed:]
	}
	for i := 0; i < len(p); {
		c := p[i]
		if c < utf8.RuneSelf {
			start := i
			for i < len(p) && p[i] < utf8.RuneSelf {
				i++
			}
			dst = append(dst, p[start:i]...)
			continue
		}
		if !utf8.FullRune(p[i:]) {
			b.n = copy(b.held[:], p[i:])
			return dst
		}
		r, size := utf8.DecodeRune(p[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, replacement...)
		} else {
			dst = append(dst, p[i:i+size]...)
		}
		i += size
	}
	return dst
}

// Flush appends what is still held, as U+FFFD since it can no longer complete, and resets.
func (b *Bridge) Flush(dst []byte) []byte {
	if b.n > 0 {
		dst = append(dst, replacement...)
		b.n = 0
	}
	return dst
}
