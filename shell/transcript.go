package shell

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/subkit/subkit/internal/tail"
	"github.com/subkit/subkit/internal/termtext"
	"github.com/subkit/subkit/internal/utf8bridge"
)

// transcript is what the session's terminal showed, markers and the session's own lines
// removed: the newest bytes in a ring, addressed by whole-stream offsets, plus the first
// bytes of the range no Step has reported yet (a Step shows the head and the tail of it).
// Its memory is bounded by the ring's limit and headMax. Not safe for concurrent use.
type transcript struct {
	ring    *tail.Ring
	head    []byte // the first headMax bytes from cursor on
	headMax int
	cursor  int64 // start of the range the next Step reports

	// file holds the transcript from offset 0 on, up to fileMax bytes (file offsets are
	// transcript offsets), or is nil. After a failed write (fileErr) it grows no more; what
	// it holds stays readable.
	file    *os.File
	fileMax int64
	fileLen int64
	fileErr error
}

func newTranscript(ringBytes, maxOutput int) *transcript {
	return &transcript{ring: tail.New(ringBytes), headMax: maxOutput / 2}
}

func (t *transcript) write(p []byte) {
	t.ring.Write(p)
	if t.file != nil && t.fileErr == nil && t.fileLen < t.fileMax {
		q := p[:min(int64(len(p)), t.fileMax-t.fileLen)]
		n, err := t.file.WriteAt(q, t.fileLen)
		t.fileLen += int64(n)
		t.fileErr = err
	}
	if room := t.headMax - len(t.head); room > 0 {
		t.head = append(t.head, p[:min(room, len(p))]...)
	}
}

func (t *transcript) total() int64 { return t.ring.Total() }

// readAt reads from offset from, at most max bytes (0: all held): from the ring, or from the
// file for what the ring no longer holds. It returns the bytes and the offset they start at
// (above from when neither holds from any more).
func (t *transcript) readAt(from int64, max int) ([]byte, int64, error) {
	if from >= t.ring.Start() || t.file == nil || from >= t.fileLen {
		data, start := t.ring.ReadAt(from, max)
		return data, start, nil
	}
	n := t.fileLen - from
	if max > 0 {
		n = min(n, int64(max))
	}
	buf := make([]byte, n)
	k, err := t.file.ReadAt(buf, from)
	if err != nil && !(errors.Is(err, io.EOF) && int64(k) == n) {
		return nil, from, err
	}
	return buf[:k], from, nil
}

// skip starts the next Step's range at the current end (what came before is not reported).
func (t *transcript) skip() {
	t.cursor = t.ring.Total()
	t.head = t.head[:0]
}

// taken is one Step's share of the transcript.
type taken struct {
	output     string
	omitted    int64
	omitFrom   int64 // the transcript offset of the first omitted byte
	from, next int64
}

// take reports the range from the cursor to the end, bounded to maxOutput bytes (head and
// tail, with a mark saying how much was left out), and moves the cursor to the end.
func (t *transcript) take(maxOutput int) taken {
	from, next := t.cursor, t.ring.Total()
	tk := taken{from: from, next: next}
	n := next - from
	if n <= int64(maxOutput) {
		data, _ := t.ring.ReadAt(from, 0) // the ring holds at least maxOutput bytes
		tk.output = termtext.Render(data)
	} else {
		head := t.head[:utf8bridge.WholeLen(t.head)]
		tailLen := maxOutput - t.headMax
		tailData, start := t.ring.ReadAt(next-int64(tailLen), 0)
		trimmed := utf8bridge.TrimStart(tailData) // a character cut in two
		start += int64(len(tailData) - len(trimmed))
		tailData = trimmed
		tk.omitted = start - from - int64(len(head))
		tk.omitFrom = from + int64(len(head))
		h := termtext.Render(head)
		if !strings.HasSuffix(h, "\n") {
			h += "\n"
		}
		tk.output = h + omittedMark(tk.omitted) + termtext.Render(tailData)
	}
	t.cursor = next
	t.head = t.head[:0]
	return tk
}

func omittedMark(n int64) string {
	return fmt.Sprintf("[... %s bytes omitted ...]\n", groupDigits(n))
}

func groupDigits(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}
