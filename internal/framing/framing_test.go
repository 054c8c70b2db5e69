package framing_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/framing"
)

func frame(body string) string { return fmt.Sprintf("Content-Length: %d\r\n\r\n%s", len(body), body) }

func readAll(t *testing.T, in string, max int64) ([]string, error) {
	t.Helper()
	r := framing.NewReader(strings.NewReader(in), max)
	var out []string
	for {
		b, err := r.ReadMessage()
		if err != nil {
			return out, err
		}
		out = append(out, string(b))
	}
}

func TestRoundTrip(t *testing.T) {
	big := strings.Repeat("x", 3<<20) // larger than one write and than the first body buffer
	bodies := []string{`{"jsonrpc":"2.0"}`, "", "ünïcødé ✓", big, `{}`}
	var buf bytes.Buffer
	w := framing.NewWriter(&buf)
	for _, b := range bodies {
		require.NoError(t, w.WriteMessage([]byte(b)))
	}
	got, err := readAll(t, buf.String(), 0)
	require.ErrorIs(t, err, io.EOF)
	require.Equal(t, len(bodies), len(got))
	for i := range bodies {
		assert.Equal(t, bodies[i], got[i], "message %d", i)
	}
}

func TestHeaders(t *testing.T) {
	cases := map[string]string{
		"lower case name":    "content-length: 2\r\n\r\n{}",
		"upper case name":    "CONTENT-LENGTH:2\r\n\r\n{}",
		"content type first": "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\nContent-Length: 2\r\n\r\n{}",
		"content type after": "Content-Length: 2\r\nContent-Type: text/plain\r\n\r\n{}",
		"unknown header":     "X-Whatever: yes\r\nContent-Length: 2\r\n\r\n{}",
		"bare newlines":      "Content-Length: 2\n\n{}",
		"spaces around":      "Content-Length :  2 \r\n\r\n{}",
		"same length twice":  "Content-Length: 2\r\nContent-Length: 2\r\n\r\n{}",
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := readAll(t, in, 0)
			require.ErrorIs(t, err, io.EOF)
			assert.Equal(t, []string{"{}"}, got)
		})
	}
}

func TestMalformed(t *testing.T) {
	cases := map[string]struct{ in, want string }{
		"no colon":          {"hello world\r\n\r\n", `without a colon: "hello world"`},
		"log line":          {"starting server...\n" + frame("{}"), `without a colon: "starting server..."`},
		"bad number":        {"Content-Length: abc\r\n\r\n", `bad Content-Length value " abc"`},
		"negative":          {"Content-Length: -5\r\n\r\n", "bad Content-Length"},
		"overflow":          {"Content-Length: 99999999999999999999\r\n\r\n", "bad Content-Length"},
		"missing length":    {"Content-Type: x\r\n\r\n{}", "no Content-Length header"},
		"blank line first":  {"\r\n" + frame("{}"), "no Content-Length header"},
		"two lengths":       {"Content-Length: 2\r\nContent-Length: 3\r\n\r\n{}", "two different Content-Length headers (2 and 3)"},
		"long line":         {"X-Long: " + strings.Repeat("a", 5000) + "\r\n", "header line longer than 4096 bytes"},
		"long header":       {strings.Repeat("X-A: "+strings.Repeat("b", 1000)+"\r\n", 20), "header longer than 16384 bytes"},
		"second frame junk": {frame("{}") + "garbage\r\n\r\n", `without a colon: "garbage"`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := readAll(t, c.in, 0)
			require.ErrorIs(t, err, framing.ErrMalformed)
			assert.NotErrorIs(t, err, io.ErrUnexpectedEOF)
			assert.Contains(t, err.Error(), c.want)
			var me *framing.MalformedError
			assert.True(t, errors.As(err, &me))
		})
	}
}

func TestTruncated(t *testing.T) {
	for name, in := range map[string]string{
		"inside header line": "Content-Len",
		"after header line":  "Content-Length: 5\r\n",
		"inside body":        "Content-Length: 5\r\n\r\n{}",
		"second frame":       frame("{}") + "Content-Length: 9\r\n\r\n{",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := readAll(t, in, 0)
			require.ErrorIs(t, err, framing.ErrMalformed)
			require.ErrorIs(t, err, io.ErrUnexpectedEOF)
		})
	}
	t.Run("clean end", func(t *testing.T) {
		got, err := readAll(t, frame("a")+frame("b"), 0)
		assert.Equal(t, io.EOF, err, "a clean end is io.EOF itself")
		assert.Equal(t, []string{"a", "b"}, got)
	})
}

// eofReader hands out at most chunk bytes a call and returns its last bytes together with
// io.EOF (then 0, io.EOF), as the io.Reader contract allows; err replaces io.EOF when set.
type eofReader struct {
	data  []byte
	chunk int
	err   error
}

func (e *eofReader) Read(p []byte) (int, error) {
	n := copy(p, e.data[:min(len(e.data), e.chunk)])
	e.data = e.data[n:]
	if len(e.data) > 0 {
		return n, nil
	}
	if e.err != nil {
		return n, e.err
	}
	return n, io.EOF
}

// A reader may deliver the last bytes of a complete frame with io.EOF: that frame is a
// frame, and only the next ReadMessage reports io.EOF.
func TestDataWithEOF(t *testing.T) {
	bodies := []string{`{"jsonrpc":"2.0"}`, "", strings.Repeat("m", 5000), "ünïcødé ✓"}
	lasts := map[string]string{
		"small":                `{}`,
		"empty":                "",
		"one bufio buffer":     strings.Repeat("b", 4096),
		"over a bufio buffer":  strings.Repeat("o", 10000),
		"over the first alloc": strings.Repeat("g", 3<<20),
	}
	for lastName, last := range lasts {
		all := append(slices.Clone(bodies), last)
		in := ""
		for _, b := range all {
			in += frame(b)
		}
		readers := map[string]func() io.Reader{
			"DataErrReader":        func() io.Reader { return iotest.DataErrReader(strings.NewReader(in)) },
			"DataErrReader 1 byte": func() io.Reader { return iotest.DataErrReader(iotest.OneByteReader(strings.NewReader(in))) },
		}
		// Chunk sizes that split headers inside a line, between lines and before the body,
		// and that deliver whole frames, or everything, in one call with io.EOF.
		for _, chunk := range []int{1, 3, 7, 19, 21, 1000, 4095, 4096, 4097, 10025, 1 << 20, len(in)} {
			readers[fmt.Sprintf("chunk %d", chunk)] = func() io.Reader { return &eofReader{data: []byte(in), chunk: chunk} }
		}
		for readerName, newReader := range readers {
			t.Run(lastName+"/"+readerName, func(t *testing.T) {
				r := framing.NewReader(newReader(), 0)
				for i, want := range all {
					got, err := r.ReadMessage()
					require.NoError(t, err, "frame %d", i)
					require.Equal(t, len(want), len(got), "frame %d", i)
					require.Equal(t, want, string(got), "frame %d", i)
				}
				for range 2 {
					_, err := r.ReadMessage()
					require.Equal(t, io.EOF, err, "after the last frame")
				}
			})
		}
	}
}

// A frame cut short stays io.ErrUnexpectedEOF when its last bytes come with io.EOF.
func TestTruncatedWithEOF(t *testing.T) {
	for name, c := range map[string]struct{ in, want string }{
		"inside header line": {frame("{}") + "Content-Len", "inside the header"},
		"after header line":  {frame("{}") + "Content-Length: 5\r\n", "inside the header"},
		"no body":            {frame("{}") + "Content-Length: 5\r\n\r\n", "body ended after 0 of 5 bytes"},
		"inside body":        {frame("{}") + "Content-Length: 5\r\n\r\n{}", "body ended after 2 of 5 bytes"},
		"inside big body":    {frame("{}") + "Content-Length: 10000\r\n\r\n" + strings.Repeat("x", 9999), "body ended after 9999 of 10000 bytes"},
	} {
		for _, chunk := range []int{1, 5, 4096, 1 << 20} {
			t.Run(fmt.Sprintf("%s/chunk %d", name, chunk), func(t *testing.T) {
				r := framing.NewReader(&eofReader{data: []byte(c.in), chunk: chunk}, 0)
				got, err := r.ReadMessage()
				require.NoError(t, err)
				require.Equal(t, "{}", string(got))
				_, err = r.ReadMessage()
				require.ErrorIs(t, err, framing.ErrMalformed)
				require.ErrorIs(t, err, io.ErrUnexpectedEOF)
				assert.Contains(t, err.Error(), c.want)
			})
		}
	}
}

// Bytes that come with another error are processed first too: a complete frame is returned,
// and the error is the next ReadMessage's, as is.
func TestDataWithError(t *testing.T) {
	boom := errors.New("boom")
	for _, body := range []string{"{}", strings.Repeat("z", 10000)} {
		r := framing.NewReader(&eofReader{data: []byte(frame(body)), chunk: 1 << 20, err: boom}, 0)
		got, err := r.ReadMessage()
		require.NoError(t, err)
		require.Equal(t, body, string(got))
		_, err = r.ReadMessage()
		assert.Equal(t, boom, err)
	}
}

// countingReader counts the bytes handed out, to prove an oversize body is never read.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

func TestTooLarge(t *testing.T) {
	hdr := "Content-Length: 1025\r\n\r\n"
	cr := &countingReader{r: io.MultiReader(strings.NewReader(frame("ok")+hdr), neverEnding('x'))}
	r := framing.NewReader(cr, 1024)
	assert.EqualValues(t, 1024, r.Max())
	b, err := r.ReadMessage()
	require.NoError(t, err)
	assert.Equal(t, "ok", string(b))
	_, err = r.ReadMessage()
	require.ErrorIs(t, err, framing.ErrTooLarge)
	assert.NotErrorIs(t, err, framing.ErrMalformed)
	var tl *framing.TooLargeError
	require.ErrorAs(t, err, &tl)
	assert.Equal(t, framing.TooLargeError{Size: 1025, Max: 1024}, *tl)
	assert.Contains(t, err.Error(), "exceeds the cap of 1024 bytes")
	assert.Less(t, cr.n, 4096+len(frame("ok"))+len(hdr), "the body must not be read")

	// The default cap is 64 MiB.
	_, err = readAll(t, fmt.Sprintf("Content-Length: %d\r\n\r\n", framing.DefaultMaxSize+1), 0)
	assert.ErrorContains(t, err, "exceeds the cap of 67108864 bytes")
	got, err := readAll(t, frame(strings.Repeat("y", 1024)), 1024)
	assert.ErrorIs(t, err, io.EOF)
	assert.Len(t, got, 1)
}

type neverEnding byte

func (b neverEnding) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(b)
	}
	return len(p), nil
}

// A header that promises a huge body the input never delivers must not make the reader
// allocate the promised size.
func TestPromiseIsNotAllocated(t *testing.T) {
	in := fmt.Sprintf("Content-Length: %d\r\n\r\nshort", 60<<20)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := readAll(t, in, 0)
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, io.ErrUnexpectedEOF)
	assert.Contains(t, err.Error(), "body ended after 5 of 62914560 bytes")
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(8<<20))
}

type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }

func TestReadErrorPassesThrough(t *testing.T) {
	boom := errors.New("boom")
	_, err := framing.NewReader(failingReader{boom}, 0).ReadMessage()
	assert.Equal(t, boom, err)
	_, err = framing.NewReader(io.MultiReader(strings.NewReader("Content-Length: 4\r\n\r\nab"), failingReader{boom}), 0).ReadMessage()
	assert.Equal(t, boom, err)
}

type failingWriter struct{ after int }

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.after <= 0 {
		return 0, io.ErrClosedPipe
	}
	f.after--
	return len(p), nil
}

func TestWriterErrors(t *testing.T) {
	assert.ErrorIs(t, framing.NewWriter(&failingWriter{}).WriteMessage([]byte("{}")), io.ErrClosedPipe)
	// A large body goes out as header + body: a failure of either is reported.
	big := make([]byte, 100<<10)
	assert.ErrorIs(t, framing.NewWriter(&failingWriter{}).WriteMessage(big), io.ErrClosedPipe)
	assert.ErrorIs(t, framing.NewWriter(&failingWriter{after: 1}).WriteMessage(big), io.ErrClosedPipe)
}

// Frames written concurrently never interleave.
func TestWriterConcurrent(t *testing.T) {
	pr, pw := io.Pipe()
	w := framing.NewWriter(pw)
	const writers, each = 8, 50
	var wg sync.WaitGroup
	for i := range writers {
		wg.Go(func() {
			for j := range each {
				body := strings.Repeat(string(rune('a'+i)), 1+(j*997)%(150<<10))
				assert.NoError(t, w.WriteMessage([]byte(body)))
			}
		})
	}
	go func() { wg.Wait(); pw.Close() }()
	r := framing.NewReader(pr, 0)
	n := 0
	for {
		b, err := r.ReadMessage()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		require.NotEmpty(t, b)
		require.Equal(t, strings.Repeat(string(b[0]), len(b)), string(b), "interleaved frame")
		n++
	}
	assert.Equal(t, writers*each, n)
}
