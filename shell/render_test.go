package shell

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRender(t *testing.T) {
	for in, want := range map[string]string{
		"a\r\nb\r\n":                     "a\nb\n",
		"50%\r100%\r\n":                  "100%\n",
		"downloading 100%\rdone\n":       "doneloading 100%\n", // as a terminal shows it
		"\rprogress 1\rprogress 2\rok\n": "okogress 2\n",
		"abc\b\bX\n":                     "aXc\n",
		"\b\bx":                          "x",
		"\x1b[31mred\x1b[0m\n":           "red\n",
		"long line\r\x1b[Kshort\n":       "short\n",
		"\x1b]0;title\a\n":               "\x1b]0;title\a\n",
		"cut \x1b[3":                     "cut ",
		"\x1b[\x01x":                     "\x1b[\x01x",
		"no newline":                     "no newline",
		"é\rè\n":                         "è\n",
		"bad \xff byte":                  "bad \uFFFD byte",
		"":                               "",
	} {
		assert.Equal(t, want, Render([]byte(in)), "%q", in)
	}
}

func TestPlainCommand(t *testing.T) {
	for _, c := range []string{"true", "ls -la /tmp", "cd /tmp", "export X=1", "git status", "make -j4 test", "echo a,b:c@d%e^f~g+h"} {
		assert.True(t, plainCommand(c), c)
	}
	for _, c := range []string{"echo )", "fi", "if", "echo 'x'", "a | b", "a && b", "a; b", "echo $X", "x > y", "echo `x`",
		"echo \"x\"", "f() {", "{ x; }", "echo *", "[[ x ]]", "! x", "echo #", "a\nb", "time x", "echo in", "a\\b"} {
		assert.False(t, plainCommand(c), c)
	}
}

func TestTranscriptTake(t *testing.T) {
	tr := newTranscript(1000, 100)
	tr.write([]byte("hello\r\n"))
	tk := tr.take(100)
	assert.Equal(t, taken{output: "hello\n", from: 0, next: 7}, tk)
	tk = tr.take(100)
	assert.Equal(t, taken{from: 7, next: 7}, tk, "nothing new")

	for i := 0; i < 60; i++ {
		tr.write([]byte("0123456789"))
	}
	tk = tr.take(100)
	assert.Equal(t, int64(7), tk.from)
	assert.Equal(t, int64(607), tk.next)
	assert.Equal(t, int64(500), tk.omitted)
	assert.Equal(t, strings.Repeat("0123456789", 5)+"\n[... 500 bytes omitted ...]\n"+strings.Repeat("0123456789", 5), tk.output)

	// Head and tail are cut on character boundaries.
	tr = newTranscript(1000, 10)
	tr.write([]byte(strings.Repeat("é", 20))) // 40 bytes
	tk = tr.take(10)
	assert.Equal(t, "éé\n[... 32 bytes omitted ...]\néé", tk.output)
	assert.Equal(t, int64(32), tk.omitted, "40 bytes, 4 shown at each end")
	assert.Equal(t, "1,234,567", groupDigits(1234567))
	assert.Equal(t, "-1,000", groupDigits(-1000))
}

func TestRenderShortEscapes(t *testing.T) {
	assert.Equal(t, "ab\n", Render([]byte("\x1b>a\x1b=\x1b(Bb\x1b7\x1b8\n")))
	assert.Equal(t, "x\x1b]0;title\a\n", Render([]byte("x\x1b]0;title\a\n")), "OSC stays")
}
