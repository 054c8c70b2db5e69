package shell

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

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
