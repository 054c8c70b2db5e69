package framing_test

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
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
		"Content-Length: 10000\r\n\r\n" + strings.Repeat("x", 10000) + "Content-Length: 1\r\n\r\ny",
		"Content-Length: 1\r\n\r\nyContent-Length: 10000\r\n\r\n" + strings.Repeat("x", 10000),
		"Content-Length: 10000\r\n\r\n" + strings.Repeat("x", 9999),
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

// FuzzDataWithEOF checks that how the input is cut into reads, and a reader that returns its
// last bytes together with io.EOF, change neither the frames read nor the error that ends them.
func FuzzDataWithEOF(f *testing.F) {
	for _, s := range []string{
		"Content-Length: 2\r\n\r\n{}Content-Length: 0\r\n\r\n",
		"Content-Length: 10000\r\n\r\n" + strings.Repeat("x", 10000) + "Content-Length: 1\r\n\r\ny",
		"Content-Length: 1\r\n\r\nyContent-Length: 10000\r\n\r\n" + strings.Repeat("x", 10000),
		"Content-Length: 10000\r\n\r\n" + strings.Repeat("x", 9999),
		"Content-Length: 5\r\n\r\nab",
		"Content-Len",
		"",
	} {
		f.Add([]byte(s), uint16(1))
		f.Add([]byte(s), uint16(4096))
		f.Add([]byte(s), uint16(len(s)))
	}
	const capBytes = 1 << 16
	read := func(r io.Reader) (frames []string, err error) {
		fr := framing.NewReader(r, capBytes)
		for {
			body, err := fr.ReadMessage()
			if err != nil {
				return frames, err
			}
			frames = append(frames, string(body))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte, chunk uint16) {
		want, wantErr := read(bytes.NewReader(data))
		got, gotErr := read(&eofReader{data: data, chunk: max(int(chunk), 1)})
		if !slices.Equal(got, want) {
			t.Fatalf("%d frames with the last bytes and io.EOF together, %d without", len(got), len(want))
		}
		if gotErr.Error() != wantErr.Error() {
			t.Fatalf("error %q with the last bytes and io.EOF together, %q without", gotErr, wantErr)
		}
		if wantErr == io.EOF && gotErr != io.EOF {
			t.Fatalf("clean end is %v, want io.EOF itself", gotErr)
		}
	})
}
