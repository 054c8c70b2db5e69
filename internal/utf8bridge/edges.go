package utf8bridge

import "unicode/utf8"

// TrimStart returns p without the continuation bytes it starts with, at most utf8.UTFMax-1 of
// them: the end of a code point whose start was cut off (a tail, a read from an offset).
func TrimStart(p []byte) []byte {
	for i := 0; i < utf8.UTFMax-1 && len(p) > 0 && !utf8.RuneStart(p[0]); i++ {
		p = p[1:]
	}
	return p
}

// WholeLen is the length of p without an incomplete code point at its end: the bytes a later
// chunk may still complete. Invalid bytes are not incomplete and count. It is 0 when p is
// nothing but the start of one code point.
func WholeLen(p []byte) int {
	n := len(p)
	for i := n - 1; i >= 0 && i >= n-(utf8.UTFMax-1); i-- {
		if utf8.RuneStart(p[i]) {
			if utf8.FullRune(p[i:]) {
				return n
			}
			return i
		}
	}
	return n
}
