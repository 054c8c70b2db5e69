package framing_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/subkit/subkit/internal/framing"
)

// FuzzReadMessage feeds arbitrary bytes to a Reader: it must never panic, never return a
// body over the cap, fail only with io.EOF, ErrTooLarge or ErrMalformed, and every body it
// returns must survive a Writer round trip.
func FuzzReadMessage(f *testing.F) {
	for _, s := range []string{
		"Content-Length: 2\r\n\r\n{}",
		"Content-Length: 2\r\n\r\n{}Content-Length: 0\r\n\r\n",
		"content-length:3\n\nabc",
		"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: 1\r\n\r\nx",
		"Content-Length: 999\r\n\r\n",
		"Content-Length: 18446744073709551616\r\n\r\n",
		"Content-Length: -1\r\n\r\n",
		"Content-Length: 1\r\nContent-Length: 2\r\n\r\nab",
		"\r\n\r\n",
		"no colon\r\n\r\n",
		"Content-Length: 5\r\n\r\nab",
		"",
	} {
		f.Add([]byte(s))
	}
	const max = 1 << 12
	f.Fuzz(func(t *testing.T, data []byte) {
		r := framing.NewReader(bytes.NewReader(data), max)
		for i := 0; ; i++ {
			body, err := r.ReadMessage()
			if err != nil {
				if err != io.EOF && !errors.Is(err, framing.ErrTooLarge) && !errors.Is(err, framing.ErrMalformed) {
					t.Fatalf("unexpected error kind: %v", err)
				}
				return
			}
			if len(body) > max {
				t.Fatalf("body of %d bytes over the cap %d", len(body), max)
			}
			var buf bytes.Buffer
			if err := framing.NewWriter(&buf).WriteMessage(body); err != nil {
				t.Fatal(err)
			}
			again, err := framing.NewReader(&buf, max).ReadMessage()
			if err != nil || !bytes.Equal(again, body) {
				t.Fatalf("round trip: %q, %v; want %q", again, err, body)
			}
			if i > len(data) {
				t.Fatalf("more frames than input bytes")
			}
		}
	})
}
