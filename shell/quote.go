package shell

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// unquote decodes a word as bash's `printf %q` writes it: backslash escapes, '...' quotes, and
// $'...' ANSI-C quotes (what %q uses for control characters). It reports false for text that
// is not such a word.
func unquote(q string) (string, bool) {
	var b strings.Builder
	for i := 0; i < len(q); {
		switch c := q[i]; {
		case c == '\\':
			if i+1 >= len(q) {
				return "", false
			}
			b.WriteByte(q[i+1])
			i += 2
		case c == '\'':
			j := strings.IndexByte(q[i+1:], '\'')
			if j < 0 {
				return "", false
			}
			b.WriteString(q[i+1 : i+1+j])
			i += j + 2
		case c == '$' && i+1 < len(q) && q[i+1] == '\'':
			n, ok := ansiC(&b, q[i+2:])
			if !ok {
				return "", false
			}
			i += 2 + n
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), true
}

// ansiC decodes the inside of $'...' from s into b, up to and including the closing quote,
// and returns how many bytes of s it used.
func ansiC(b *strings.Builder, s string) (int, bool) {
	for i := 0; i < len(s); {
		c := s[i]
		if c == '\'' {
			return i + 1, true
		}
		if c != '\\' {
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(s) {
			return 0, false
		}
		e := s[i+1]
		i += 2
		switch e {
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'e', 'E':
			b.WriteByte(0x1b)
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case '\\', '\'', '"', '?':
			b.WriteByte(e)
		case 'c':
			if i >= len(s) {
				return 0, false
			}
			b.WriteByte(s[i] & 0x1f)
			i++
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i - 1
			for i < len(s) && i-j < 3 && s[i] >= '0' && s[i] <= '7' {
				i++
			}
			v, _ := strconv.ParseUint(s[j:i], 8, 16)
			b.WriteByte(byte(v))
		case 'x', 'u', 'U':
			digits := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			j := i
			for i < len(s) && i-j < digits && isHex(s[i]) {
				i++
			}
			if i == j {
				b.WriteByte('\\')
				b.WriteByte(e)
				continue
			}
			v, _ := strconv.ParseUint(s[j:i], 16, 32)
			if e == 'x' {
				b.WriteByte(byte(v))
			} else {
				b.WriteRune(validRune(rune(v)))
			}
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return 0, false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func validRune(r rune) rune {
	if !utf8.ValidRune(r) {
		return utf8.RuneError
	}
	return r
}
