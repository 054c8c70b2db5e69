package coderuntime

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scanAll feeds data to a scanner in chunks of n bytes and returns the text and the nonces.
func scanAll(data []byte, n int) (string, []string) {
	var sc scanner
	var text bytes.Buffer
	var marks []string
	put := func(p []byte) { text.Write(p) }
	for len(data) > 0 {
		k := min(n, len(data))
		sc.feed(data[:k], put, func(nonce string) {
			text.WriteString("|") // where the marker was
			marks = append(marks, nonce)
		})
		data = data[k:]
	}
	sc.flush(put)
	return text.String(), marks
}

func testMarker(nonce string) string { return markHead + nonce + markTail }

func TestScannerCutsMarkersAtAnySplit(t *testing.T) {
	n1, n2 := strings.Repeat("a1", nonceLen/2), strings.Repeat("0f", nonceLen/2)
	stream := "hello\n" + testMarker(n1) + "late \x1e\x1f" + testMarker(n2) + markHead + "not hex" + strings.Repeat("z", nonceLen) +
		"\x1e" + markHead[:5]
	want := "hello\n|late \x1e\x1f|" + markHead + "not hex" + strings.Repeat("z", nonceLen) + "\x1e" + markHead[:5]
	for n := 1; n <= len(stream); n++ {
		text, marks := scanAll([]byte(stream), n)
		require.Equal(t, want, text, "chunks of %d", n)
		require.Equal(t, []string{n1, n2}, marks, "chunks of %d", n)
	}
}

func TestScannerHoldsBackOnlyAPossibleMarker(t *testing.T) {
	var sc scanner
	var got []string
	put := func(p []byte) { got = append(got, string(p)) }
	sc.feed([]byte("abc"+markHead[:4]), put, nil)
	assert.Equal(t, []string{"abc"}, got, "what may start a marker waits for the next read")
	sc.feed([]byte("xyz"), put, nil)
	assert.Equal(t, []string{"abc", markHead[:4] + "xyz"}, got, "and is text once it cannot")
	sc.feed([]byte(markHead+"0123"), put, nil)
	assert.Len(t, got, 2, "a head and the start of a nonce wait")
	sc.flush(put)
	assert.Equal(t, markHead+"0123", got[2], "flush gives back what was held")
}

func FuzzScanner(f *testing.F) {
	f.Add([]byte("hello"), []byte("world"), uint8(3))
	f.Add([]byte("\x1e\x1f"), []byte(markHead[:9]), uint8(1))
	f.Fuzz(func(t *testing.T, a, b []byte, chunk uint8) {
		if bytes.Contains(a, []byte(markHead)) || bytes.Contains(b, []byte(markHead)) {
			t.Skip()
		}
		nonce := strings.Repeat("7e", nonceLen/2)
		stream := string(a) + testMarker(nonce) + string(b)
		joined := string(a) + "|" + string(b)
		if strings.Contains(joined, markHead) { // a's end and b's start may make a head
			t.Skip()
		}
		text, marks := scanAll([]byte(stream), int(chunk)+1)
		if text != joined || len(marks) != 1 || marks[0] != nonce {
			t.Fatalf("stream %q in chunks of %d: text %q, marks %q", stream, int(chunk)+1, text, marks)
		}
	})
}

func TestSplitUTF8(t *testing.T) {
	cases := []struct{ in, whole, rest string }{
		{"abc", "abc", ""},
		{"a\xe2\x82", "a", "\xe2\x82"},
		{"a\xe2\x82\xac", "a€", ""},
		{"\xf0\x9f\x8e", "", "\xf0\x9f\x8e"},
		{"a\xff", "a\xff", ""},
		{"a\x80\x80\x80", "a\x80\x80\x80", ""},
		{"", "", ""},
	}
	for _, c := range cases {
		w, r := splitUTF8([]byte(c.in))
		assert.Equal(t, c.whole, string(w), "%q", c.in)
		assert.Equal(t, c.rest, string(r), "%q", c.in)
		assert.True(t, len(r) < utf8.UTFMax)
	}
}

func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	in := &message{Type: "execute", ID: "c1", Count: 1, Code: "x = '€'\n", Nonce: "n"}
	require.NoError(t, writeFrame(&buf, in))
	require.NoError(t, writeFrame(&buf, &message{Type: "probe", ID: "p"}))
	out, err := readFrame(&buf)
	require.NoError(t, err)
	assert.Equal(t, in, out)
	out, err = readFrame(&buf)
	require.NoError(t, err)
	assert.Equal(t, "probe", out.Type)
	_, err = readFrame(&buf)
	assert.ErrorIs(t, err, io.EOF, "the end between frames")

	_, err = readFrame(bytes.NewReader([]byte{0xff, 0xff, 0xff, 0xff}))
	assert.ErrorIs(t, err, errFrameTooLarge, "a length above the limit is refused before any read")
	_, err = readFrame(bytes.NewReader([]byte{0, 0, 0, 9, '{'}))
	assert.ErrorIs(t, err, io.ErrUnexpectedEOF, "the end inside a frame")
	_, err = readFrame(bytes.NewReader([]byte{0, 0, 0, 2, '{', '['}))
	assert.Error(t, err)
	assert.ErrorIs(t, writeFrame(io.Discard, &message{Type: "execute", Code: strings.Repeat("x", maxFrame)}), errFrameTooLarge)
}

func TestNilSession(t *testing.T) {
	var s *procSession
	_, err := s.Run(context.Background(), Cell{Code: "1"}, Callbacks{})
	assert.ErrorIs(t, err, ErrInvalid)
	assert.ErrorIs(t, s.Restart(context.Background()), ErrInvalid)
	assert.ErrorIs(t, s.Close(), ErrInvalid)
	assert.Equal(t, Language(""), s.Language())
	var zero procSession
	_, err = zero.Run(context.Background(), Cell{Code: "1"}, Callbacks{})
	assert.ErrorIs(t, err, ErrInvalid)
	assert.True(t, errors.Is(zero.Close(), ErrInvalid))
}

func TestEndBoundSaturates(t *testing.T) {
	assert.Equal(t, 2*time.Second+killWaitBound, endBound(time.Second))
	assert.Equal(t, time.Duration(math.MaxInt64), endBound(time.Duration(math.MaxInt64)))
	assert.Positive(t, endBound(time.Duration(math.MaxInt64/2)))
}
