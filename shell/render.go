package shell

import (
	"strings"
	"unicode/utf8"
)

// Render turns terminal output into the text a person would read on the screen, line by
// line: "\r\n" is a newline; a lone "\r" returns to the start of the line, so what follows
// overwrites it (a progress bar of 10,000 updates reads as its last state); "\b" steps back
// one character; CSI escape sequences (colours, cursor movement) are dropped, except that
// "erase to end of line" (ESC [ K) erases; the short escape sequences a full-screen program
// leaves behind (ESC = and ESC > keypad modes, ESC 7 and ESC 8, a character set choice
// ESC ( B) are dropped. Every other byte is kept, other escape sequences (OSC) included.
// Invalid UTF-8 becomes U+FFFD.
func Render(p []byte) string {
	var out strings.Builder
	out.Grow(len(p))
	var line []rune
	col := 0
	for i := 0; i < len(p); {
		c := p[i]
		switch {
		case c == '\n':
			writeRunes(&out, line)
			out.WriteByte('\n')
			line, col = line[:0], 0
			i++
		case c == '\r':
			col = 0
			i++
		case c == '\b':
			col = max(0, col-1)
			i++
		case c == 0x1b && i+1 < len(p) && strings.IndexByte("=>78cDEHMNZ", p[i+1]) >= 0:
			i += 2 // keypad mode, cursor save and restore, reset, index: nothing to read
		case c == 0x1b && i+2 < len(p) && (p[i+1] == '(' || p[i+1] == ')'):
			i += 3 // a character set for G0 or G1
		case c == 0x1b && i+1 < len(p) && p[i+1] == '[':
			j := i + 2
			for j < len(p) && (p[j] >= 0x30 && p[j] <= 0x3f || p[j] >= 0x20 && p[j] <= 0x2f) {
				j++
			}
			if j >= len(p) {
				i = j // a cut sequence: dropped
				continue
			}
			if p[j] >= 0x40 && p[j] <= 0x7e {
				if p[j] == 'K' && col < len(line) {
					line = line[:col]
				}
				i = j + 1
				continue
			}
			fallthrough // not a CSI sequence: keep the bytes
		default:
			r, n := utf8.DecodeRune(p[i:])
			if col < len(line) {
				line[col] = r
			} else {
				line = append(line, r)
			}
			col++
			i += n
		}
	}
	writeRunes(&out, line)
	return out.String()
}

func writeRunes(b *strings.Builder, rs []rune) {
	for _, r := range rs {
		b.WriteRune(r)
	}
}
