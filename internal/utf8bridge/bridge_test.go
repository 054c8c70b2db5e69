package utf8bridge

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// feedChunks feeds p split at every step bytes.
func feedChunks(p []byte, step int) []byte {
	var b Bridge
	var out []byte
	for len(p) > 0 {
		n := min(step, len(p))
		out = b.Feed(out, p[:n])
		if !utf8.Valid(out) {
			panic("invalid output")
		}
		p = p[n:]
	}
	return b.Flush(out)
}

func TestEmojiOneByteAtATime(t *testing.T) {
	var b Bridge
	emoji := []byte("😀") // 4 bytes
	var out []byte
	for i, c := range emoji {
		out = b.Feed(out, []byte{c})
		if i < 3 && len(out) != 0 {
			t.Fatalf("after %d bytes got %q, want nothing yet", i+1, out)
		}
	}
	if string(out) != "😀" {
		t.Fatalf("got %q", out)
	}
}

func TestCases(t *testing.T) {
	for _, s := range []string{
		"plain", "héllo wörld", "😀x😀", "\xff\xfe", "a\xe2\x82", "\xe2\x82\xac", "\xe2(\xa1",
		"\xf0\x9f\x98", "\xc0\xaf", "\xed\xa0\x80", "€\xf0\x9f", strings.Repeat("日本", 100),
	} {
		want := flushTail([]byte(s))
		for step := 1; step <= 5; step++ {
			if got := feedChunks([]byte(s), step); !bytes.Equal(got, want) {
				t.Errorf("%q step %d: got %q want %q", s, step, got, want)
			}
		}
	}
}

// perByte decodes with utf8.DecodeRune, one U+FFFD per invalid byte.
func perByte(p []byte) []byte {
	var out []byte
	for len(p) > 0 {
		r, size := utf8.DecodeRune(p)
		if r == utf8.RuneError && size == 1 {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, p[:size]...)
		}
		p = p[size:]
	}
	return out
}

func FuzzBridge(f *testing.F) {
	f.Add([]byte("😀 héllo"), uint8(1))
	f.Add([]byte("\xf0\x9f\x98\xff\xe2\x82"), uint8(2))
	f.Add([]byte("\xe2\x82\xe2\x82\xac"), uint8(3))
	f.Fuzz(func(t *testing.T, p []byte, step uint8) {
		got := feedChunks(p, int(step%8)+1)
		want := flushTail(p)
		if !bytes.Equal(got, want) {
			t.Fatalf("%q step %d: got %q want %q", p, step, got, want)
		}
	})
}

// flushTail is perByte except that an incomplete sequence at the very end counts as one
// U+FFFD, as Flush reports it.
func flushTail(p []byte) []byte {
	for k := 1; k < utf8.UTFMax && k <= len(p); k++ {
		tail := p[len(p)-k:]
		if utf8.RuneStart(tail[0]) && !utf8.FullRune(tail) {
			return append(perByte(p[:len(p)-k]), "\uFFFD"...)
		}
	}
	return perByte(p)
}
