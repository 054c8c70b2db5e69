package termtext

import (
	"strings"
	"unicode/utf8"
)

const (
	esc = 0x1b
	bel = 0x07
	del = 0x7f
)

// Lines is Render's text ending in a newline, or "" when p renders to nothing: output as a
// block of whole lines, for text that other lines follow.
func Lines(p []byte) string {
	text := Render(p)
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return text
}

// Render turns raw terminal or pipe bytes into the text a model reads; the package comment
// says what becomes of each kind of byte.
func Render(p []byte) string {
	var r renderer
	r.out.Grow(len(p))
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '\n':
			r.newline()
			i++
		case c == '\r':
			r.col = 0
			i++
		case c == '\b':
			r.col = max(0, r.col-1)
			i++
		case c == '\t':
			r.put('\t')
			i++
		case c == esc:
			i = r.escape(p, i)
		case c < 0x20:
			r.put(0x2400 + rune(c))
			i++
		case c == del:
			r.put(0x2421)
			i++
		case c < utf8.RuneSelf:
			r.put(rune(c))
			i++
		default:
			ch, n := utf8.DecodeRune(p[i:])
			if ch >= 0x80 && ch <= 0x9f { // a C1 control; an invalid byte is RuneError already
				ch = utf8.RuneError
			}
			r.put(ch)
			i += n
		}
	}
	r.flush()
	return r.out.String()
}

// renderer holds the line being drawn: a terminal's row, written at col.
type renderer struct {
	out  strings.Builder
	line []rune
	col  int
}

func (r *renderer) put(ch rune) {
	for r.col > len(r.line) { // after an erase the cursor may be past the line's end
		r.line = append(r.line, ' ')
	}
	if r.col < len(r.line) {
		r.line[r.col] = ch
	} else {
		r.line = append(r.line, ch)
	}
	r.col++
}

func (r *renderer) flush() {
	for _, ch := range r.line {
		r.out.WriteRune(ch)
	}
	r.line, r.col = r.line[:0], 0
}

func (r *renderer) newline() {
	r.flush()
	r.out.WriteByte('\n')
}

// escape handles the escape sequence at p[i] (an ESC) and returns the index after it.
func (r *renderer) escape(p []byte, i int) int {
	if i+1 >= len(p) {
		return len(p) // cut off
	}
	switch c := p[i+1]; {
	case c == '[':
		return r.csi(p, i)
	case c == ']' || c == 'P' || c == '_' || c == '^' || c == 'X':
		return stringEnd(p, i+2)
	case c >= 0x20 && c <= 0x2f: // intermediates, then a final byte: ESC ( B, ESC # 8
		j := i + 1
		for j < len(p) && p[j] >= 0x20 && p[j] <= 0x2f {
			j++
		}
		switch {
		case j >= len(p):
			return len(p) // cut off
		case p[j] >= 0x30 && p[j] <= 0x7e:
			return j + 1
		}
	case c >= 0x30 && c <= 0x7e: // ESC 7, ESC =, ESC c, ESC \ (a lone ST)...
		return i + 2
	}
	r.put(0x2400 + esc) // an ESC that starts no sequence: shown
	return i + 1
}

// csi handles the CSI sequence at p[i] (ESC [): parameter and intermediate bytes, then a
// final byte. Erase in line erases; every other sequence is dropped. Bytes that cannot be in
// a CSI sequence show the ESC, and are then read as text.
func (r *renderer) csi(p []byte, i int) int {
	j := i + 2
	for j < len(p) && p[j] >= 0x30 && p[j] <= 0x3f {
		j++
	}
	params := string(p[i+2 : j])
	for j < len(p) && p[j] >= 0x20 && p[j] <= 0x2f {
		j++
	}
	if j >= len(p) {
		return len(p) // cut off
	}
	if p[j] < 0x40 || p[j] > 0x7e {
		r.put(0x2400 + esc)
		return i + 1
	}
	switch p[j] {
	case 'C': // cursor forward
		r.moveTo(r.col + count(params))
	case 'D': // cursor back
		r.moveTo(r.col - count(params))
	case 'G': // cursor to a column
		r.moveTo(count(params) - 1)
	case 'K':
		switch params {
		case "", "0": // to the end of the line
			if r.col < len(r.line) {
				r.line = r.line[:r.col]
			}
		case "1": // from the start of the line through the cursor
			for k := 0; k <= r.col && k < len(r.line); k++ {
				r.line[k] = ' '
			}
		case "2": // the whole line; the cursor stays
			r.line = r.line[:0]
		}
	}
	return j + 1
}

// maxColumn is the column beyond which a cursor movement does not take the cursor past the
// end of the line, so a sequence cannot grow a line by more than this many blanks.
const maxColumn = 1000

func (r *renderer) moveTo(col int) {
	r.col = max(0, min(col, max(len(r.line), maxColumn)))
}

// count is a cursor movement's count: its first parameter, 1 when absent or 0.
func count(params string) int {
	n := 0
	for _, c := range []byte(params) {
		if c < '0' || c > '9' {
			break
		}
		n = min(n*10+int(c-'0'), 1<<20)
	}
	return max(n, 1)
}

// stringEnd returns the index after a control string (OSC, DCS, APC, PM, SOS) whose body
// starts at j: after its BEL or ST (ESC \), or at the newline that ends its line when it has
// no terminator there (the newline is kept), or at the end of the input.
func stringEnd(p []byte, j int) int {
	for ; j < len(p); j++ {
		switch p[j] {
		case bel:
			return j + 1
		case '\n':
			return j
		case esc:
			if j+1 < len(p) && p[j+1] == '\\' {
				return j + 2
			}
		}
	}
	return j
}
