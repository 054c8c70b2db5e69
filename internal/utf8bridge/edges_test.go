package utf8bridge

import "testing"

func TestTrimStart(t *testing.T) {
	for in, want := range map[string]string{
		"":                  "",
		"abc":               "abc",
		"\x82\xacx":         "x",     // the end of a cut "€"
		"\x98\x80é":         "é",     // the end of a cut "😀"
		"\x9f\x98\x80":      "",      // all three continuation bytes of "😀"
		"\x80\x80\x80\x80a": "\x80a", // at most three: more is no cut code point
		"é":                 "é",
		"\xffa":             "\xffa", // an invalid byte is not a continuation byte
	} {
		if got := string(TrimStart([]byte(in))); got != want {
			t.Errorf("TrimStart(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestWholeLen(t *testing.T) {
	for in, want := range map[string]int{
		"":              0,
		"abc":           3,
		"ab\xe2\x82":    2, // "€" cut after two of its three bytes
		"ab\xe2":        2,
		"a\xf0\x9f\x98": 1, // "😀" cut after three of four
		"a😀":            5,
		"\xe2\x82":      0, // only the start of one code point
		"a\xff":         2, // invalid, not incomplete
		"a\x80":         2, // a stray continuation byte is not incomplete
		"é€":            5,
	} {
		if got := WholeLen([]byte(in)); got != want {
			t.Errorf("WholeLen(%q) = %d, want %d", in, got, want)
		}
	}
}
