package termtext

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestRender(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"no newline", "no newline"},
		{"a\nb\n", "a\nb\n"},
		{"a\r\nb\r\n", "a\nb\n"},
		{"tab\there\n", "tab\there\n"},
		// Carriage returns: what follows overwrites the line, as on a terminal.
		{"50%\r100%\r\n", "100%\n"},
		{"downloading 100%\rdone\n", "doneloading 100%\n"},
		{"\rprogress 1\rprogress 2\rok\n", "okogress 2\n"},
		{"é\rè\n", "è\n"},
		{"left\r", "left"},
		{"abc\b\bX\n", "aXc\n"},
		{"\b\bx", "x"},
		// CSI: dropped, erase in line erases.
		{"\x1b[31mred\x1b[0m\n", "red\n"},
		{"\x1b[1;32;48;5;200mx\x1b[m", "x"},
		{"long line\r\x1b[Kshort\n", "short\n"},
		{"long line\r\x1b[0Kshort\n", "short\n"},
		{"abcdef\r\x1b[3C\x1b[1Kx", "   xef"},
		{"abcdef\x1b[2Kx\n", "      x\n"},
		{"abcdef\x1b[3Dx\x1b[1Gy\x1b[Gz\n", "zbcxef\n"},
		{"a\x1b[99999999Cb", "a" + strings.Repeat(" ", 999) + "b"},
		{"10%\r\x1b[2K20%\n", "20%\n"},
		{"\x1b[?25l\x1b[?2004hprompt\x1b[?2004l\x1b[?25h", "prompt"},
		{"\x1b[2J\x1b[Hhome", "home"},
		{"cut \x1b[3", "cut "},
		{"\x1b[\x01x", "␛[␁x"},
		// OSC and other strings: dropped up to BEL, ST or the end of the line.
		{"\x1b]0;title\a\n", "\n"},
		{"x\x1b]0;title\x1b\\y", "xy"},
		{"\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\\n", "link\n"},
		{"\x1b]6973;nonce;0\x07after", "after"},
		{"a\x1b]unterminated\nnext\n", "a\nnext\n"},
		{"\x1bPdcs body\x1b\\x", "x"},
		{"\x1b_apc\x07\x1b^pm\x07\x1bXsos\x07y", "y"},
		// Short escapes: dropped.
		{"\x1b>a\x1b=\x1b(Bb\x1b7\x1b8\n", "ab\n"},
		{"\x1b#8\x1bc\x1bMz", "z"},
		{"end\x1b", "end"},
		{"end\x1b(", "end"},
		// Control bytes, DEL and a stray ESC: shown as control pictures.
		{"a\x00b", "a␀b"},
		{"bell\a\n", "bell␇\n"},
		{"\x01\x02\x1f\x7f", "␁␂␟␡"},
		{"\x0b\x0c", "␋␌"},
		{"\x1b\x01", "␛␁"},
		{"\x1b\xc3\xa9", "␛é"},
		// Invalid UTF-8 and C1 controls: U+FFFD, one per byte.
		{"bad \xff byte", "bad \uFFFD byte"},
		{"\xff\xfe", "\uFFFD\uFFFD"},
		{"cut \xe2\x82", "cut \uFFFD\uFFFD"},
		{"\xc2\x9b31m", "\uFFFD31m"},
		{"\x9b31m", "\uFFFD31m"},
		// The example every tool shows the same way.
		{"a\r\x1b[32mb\x1b[0m\x00c", "b␀c"},
	} {
		got := Render([]byte(tc.in))
		assert.Equal(t, tc.want, got, "%q", tc.in)
		assert.Equal(t, got, Render([]byte(got)), "idempotent on %q", tc.in)
	}
}

// Lines ends what it renders in a newline, and renders what shows nothing as nothing.
func TestLines(t *testing.T) {
	for in, want := range map[string]string{"": "", "\x1b[0m": "", "a": "a\n", "a\n": "a\n", "a\r\nb": "a\nb\n"} {
		assert.Equal(t, want, Lines([]byte(in)), "%q", in)
	}
}

func TestRenderLarge(t *testing.T) {
	var b strings.Builder
	for i := range 10000 {
		b.WriteString("\rprogress ")
		b.WriteString(strings.Repeat("#", i%40))
	}
	b.WriteString("\r\x1b[Kdone\n")
	assert.Equal(t, "done\n", Render([]byte(b.String())))
}

// FuzzRender: Render never panics, its output is valid UTF-8 with no control byte but "\n"
// and "\t", it keeps every line break, and rendering its output changes nothing.
func FuzzRender(f *testing.F) {
	for _, s := range []string{
		"", "a\r\x1b[32mb\x1b[0m\x00c", "50%\r100%\r\n", "\x1b]0;t\a", "\x1b[", "\x1b", "\xff", "\xc2\x9b",
		"abcdef\r\x1b[3C\x1b[1Kx", "ab\x1b[2Kc", "\x1bP\x1b\\", "\b\b\b", "é\rè", "\x1b]x\ny",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		got := Render(p)
		if !utf8.ValidString(got) {
			t.Fatalf("Render(%q) = %q: not valid UTF-8", p, got)
		}
		for _, c := range []byte(got) {
			if c < 0x20 && c != '\n' && c != '\t' || c == 0x7f {
				t.Fatalf("Render(%q) = %q: control byte %#x", p, got, c)
			}
		}
		if again := Render([]byte(got)); again != got {
			t.Fatalf("Render(%q) = %q, but Render of that is %q", p, got, again)
		}
		if n, m := strings.Count(got, "\n"), strings.Count(string(p), "\n"); n > m {
			t.Fatalf("Render(%q) = %q: %d line breaks from %d", p, got, n, m)
		}
	})
}
