package shell

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const testNonce = "0123456789abcdef0123456789abcdef"

// testPath and testRC are the command and rc files of the scanner tests.
const (
	testPath = "/run/x/shell-1/command"
	testRC   = "/run/x/shell-1/rc"
)

func testOwn() ownLines { return newOwnLines(testNonce, testPath, promptCommand(testNonce, testRC)) }

// scanAll feeds chunks to a scanner and returns the transcript and the markers, with the
// transcript offset at which each marker came.
func scanAll(chunks ...string) (string, []marker, []int) {
	out, marks, at, _ := scanScreens(chunks...)
	return out, marks, at
}

// recordScreen is a screenSink that writes what it gets, framed: "<on SEQ>", the bytes,
// "<off SEQ>".
type recordScreen struct{ b *bytes.Buffer }

func (r recordScreen) on(seq []byte)  { fmt.Fprintf(r.b, "<on %q>", seq) }
func (r recordScreen) write(p []byte) { r.b.Write(p) }
func (r recordScreen) off(seq []byte) { fmt.Fprintf(r.b, "<off %q>", seq) }

// scanScreens is scanAll with a screen sink; it also returns what the screen got.
func scanScreens(chunks ...string) (string, []marker, []int, string) {
	var out, scr bytes.Buffer
	var marks []marker
	var at []int
	sc := newScanner(testOwn(), func(p []byte) { out.Write(p) }, func(m marker) {
		marks = append(marks, m)
		at = append(at, out.Len())
	}, recordScreen{&scr})
	for _, c := range chunks {
		sc.feed([]byte(c))
	}
	sc.end()
	return out.String(), marks, at, scr.String()
}

// A program's alternate screen goes to the screen sink, from the switch to the switch back or
// the next marker; the lines around it are output.
func TestScannerScreen(t *testing.T) {
	stream := "before\r\n\x1b[?1049h\x1b[H\x1b[2Jdrawn\x1b[?1049l\x1b>after\r\n" +
		"x\x1b[?47hnever left" + mk(0, "", 1, "/") + "next\r\n"
	out, marks, _, scr := scanScreens(stream)
	assert.Equal(t, "before\r\n\x1b>after\r\nxnext\r\n", out)
	assert.Equal(t, `<on "\x1b[?1049h">`+"\x1b[H\x1b[2Jdrawn\x1b[?1049l"+`<off "\x1b[?1049l">`+
		`<on "\x1b[?47h">never left<off "">`, scr)
	assert.Len(t, marks, 1)
	for i := 0; i <= len(stream); i++ {
		o, m, _, sc := scanScreens(stream[:i], stream[i:])
		require.Equal(t, out, o, "cut at %d", i)
		require.Equal(t, scr, sc, "cut at %d", i)
		require.Equal(t, marks, m, "cut at %d", i)
	}
}

func mk(status int, flags string, seq int, cwdQ string) string {
	s := ""
	if seq > 0 {
		s = fmt.Sprint(seq)
	}
	return fmt.Sprintf("\x1b]6973;%s;%d;%s;%s;1.2;%s\a", testNonce, status, flags, s, cwdQ)
}

func TestScannerMarkers(t *testing.T) {
	stream := "hello\r\n" + mk(0, "", 1, "/tmp") + "abc" + mk(3, "Pe", 2, `$'/a\nb'`) + "tail"
	out, marks, at := scanAll(stream)
	assert.Equal(t, "hello\r\nabctail", out)
	require.Len(t, marks, 2)
	assert.Equal(t, marker{status: 0, seq: 1, inst: "1.2", cwd: "/tmp", cwdOK: true}, marks[0])
	assert.Equal(t, marker{status: 3, flags: "Pe", seq: 2, inst: "1.2", cwd: "/a\nb", cwdOK: true}, marks[1])
	assert.Equal(t, []int{7, 10}, at, "a marker comes after the output before it, partial line included")

	// The same stream cut at every byte gives the same result.
	for i := 0; i <= len(stream); i++ {
		o, m, a := scanAll(stream[:i], stream[i:])
		require.Equal(t, out, o, "cut at %d", i)
		require.Equal(t, marks, m, "cut at %d", i)
		require.Equal(t, at, a, "cut at %d", i)
	}
}

func TestScannerForgeries(t *testing.T) {
	for _, forged := range []string{
		"\x1b]6973;ffffffffffffffffffffffffffffffff;0;;1;/x\a", // another nonce
		"\x1b]6973;;0;;;/x\a",               // none
		"\x1b]697",                          // cut short by the end
		"\x1b[31mred\x1b[0m \x1b]0;title\a", // other escapes
	} {
		out, marks, _ := scanAll("a"+forged+"b\n", mk(1, "", 4, "/"))
		assert.Equal(t, "a"+forged+"b\n", out, "%q", forged)
		require.Len(t, marks, 1, "%q", forged)
		assert.Equal(t, 4, marks[0].seq)
	}
	// With the nonce but malformed: not a marker, and output.
	for _, bad := range []string{
		"\x1b]6973;" + testNonce + ";zero;;;i;/x\a", "\x1b]6973;" + testNonce + ";0;;-1;i;/x\a", "\x1b]6973;" + testNonce + ";0;;\a",
	} {
		out, marks, _ := scanAll("a"+bad+"b\n", "c\n")
		assert.Equal(t, "a"+bad+"b\nc\n", out, "%q", bad)
		assert.Empty(t, marks, "%q", bad)
	}
	// An unterminated look-alike longer than any marker is output, and does not swallow what
	// follows.
	long := "\x1b]6973;" + strings.Repeat("x", markerMax+10)
	out, marks, _ := scanAll(long, "\n"+mk(0, "", 1, "/"))
	assert.Equal(t, long+"\n", out)
	assert.Len(t, marks, 1)
}

// Only the session's own lines are removed: the echo of the typed line (after a half line ^U
// erased), set -x's trace of its source, set -v's echo of PROMPT_COMMAND (followed by a marker
// saying verbose is on). A user's line carrying the nonce stays.
func TestScannerOwnLines(t *testing.T) {
	typed := strings.TrimPrefix(string(typedLine(testNonce, 7)), "\x15")
	typed = strings.TrimSuffix(typed, "\n") + "\r\n"
	pc := promptCommand(testNonce, testRC) + "\r\n"
	stream := typed + // the terminal's echo of the typed line
		"echo half\b \b\b \b" + typed + // a half line erased by ^U, then the typed line
		"+ builtin source " + testPath + "\r\n" + // set -x of the typed line
		"++ echo out 1\r\nout 1\r\n" +
		"declare -f __sk_" + testNonce + "_p\r\n" + // a user's line with the nonce
		pc + mk(0, "v", 7, "/") + // set -v of PROMPT_COMMAND
		pc + mk(0, "", 8, "/") + // echo $PROMPT_COMMAND as a command's last line
		"out 2\r\n"
	out, marks, _ := scanAll(stream)
	assert.Equal(t, "++ echo out 1\r\nout 1\r\ndeclare -f __sk_"+testNonce+"_p\r\n"+pc+"out 2\r\n", out)
	assert.Len(t, marks, 2)
	for i := 0; i <= len(stream); i++ {
		o, _, _ := scanAll(stream[:i], stream[i:])
		require.Equal(t, out, o, "cut at %d", i)
	}

	// A held partial line goes out at flush unless it may still become the session's own.
	var got bytes.Buffer
	sc := newScanner(testOwn(), func(p []byte) { got.Write(p) }, func(marker) {}, nil)
	sc.feed([]byte("Password: "))
	sc.flush()
	assert.Equal(t, "Password: ", got.String())
	sc.feed([]byte("x " + testNonce))
	sc.flush()
	assert.Equal(t, "Password: ", got.String(), "held: it may be the echo of the typed line")
	sc.feed([]byte(mk(0, "", 1, "/")))
	assert.Equal(t, "Password: x "+testNonce, got.String(), "a marker lets it out")

	// A long line streams through and the scanner holds at most lineMax of it.
	got.Reset()
	sc.feed(bytes.Repeat([]byte("y"), 3*lineMax))
	assert.Equal(t, 3*lineMax, got.Len())
	sc.feed([]byte("z\n"))
	assert.Equal(t, 3*lineMax+2, got.Len())
	assert.LessOrEqual(t, cap(sc.line), lineMax)
}

// A program that prints the start of a marker and never ends it must not hide the real
// marker that follows: the session would wait for its prompt forever.
func TestScannerUnterminatedLookAlike(t *testing.T) {
	for _, junk := range []string{"\x1b]6973;", "\x1b]6973;" + testNonce + ";", "\x1b]6973;" + testNonce + ";0;;"} {
		out, marks, _ := scanAll("a"+junk, mk(4, "", 1, "/tmp")+"b")
		assert.Equal(t, "a"+junk+"b", out, "%q", junk)
		if assert.Len(t, marks, 1, "%q", junk) {
			assert.Equal(t, 4, marks[0].status)
		}
	}
}

func FuzzScannerSplit(f *testing.F) {
	f.Add("hello\r\n"+mk(0, "", 1, "/tmp")+"abc", 3)
	f.Add("\x1b]6973;x\a"+testNonce+"\n"+mk(2, "E", 2, `'/a b'`), 10)
	f.Add("a\x1b[?1049hdraw\x1b[?1049lb"+mk(0, "", 1, "/"), 7)
	f.Add("\x1b]6973;"+mk(0, "", 1, "/"), 3)
	f.Fuzz(func(t *testing.T, s string, cut int) {
		if cut < 0 || cut > len(s) {
			return
		}
		o1, m1, a1, s1 := scanScreens(s)
		o2, m2, a2, s2 := scanScreens(s[:cut], s[cut:])
		if o1 != o2 || s1 != s2 || fmt.Sprint(m1) != fmt.Sprint(m2) || fmt.Sprint(a1) != fmt.Sprint(a2) {
			t.Fatalf("cut at %d changes the result: %q %v %v vs %q %v %v", cut, o1, m1, a1, o2, m2, a2)
		}
		if strings.Contains(o1, mk(0, "", 1, "/")) {
			t.Fatalf("a real marker reached the transcript: %q", o1)
		}
	})
}

// unquote decodes what bash's printf %q writes, for every kind of directory name.
func TestUnquote(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	names := []string{
		"/tmp", "", "/a b;c", "/a\nb\tc\\d'e\"f", "/\a\b\x1b\f\r\v", "/ünï/cödé", "/x\xe9y", "/😀 €",
		"/$HOME/`x`/!h/#/&/*/(/)/|/</>/[/]/{/}/~/?", "/\x01\x7f\u00a0", "it's", "/new\nline", "/bell\a",
	}
	for _, name := range names {
		for _, locale := range []string{"C", "C.UTF-8"} {
			cmd := exec.Command(bash, "-c", `printf %q "$1"`, "_", name)
			cmd.Env = []string{"LC_ALL=" + locale}
			q, err := cmd.Output()
			require.NoError(t, err)
			assert.NotContains(t, string(q), "\a", "raw BEL never appears")
			got, ok := unquote(string(q))
			assert.True(t, ok, "%q (%s) from %q", q, locale, name)
			assert.Equal(t, name, got, "%q (%s)", q, locale)
		}
	}
	for _, bad := range []string{"'unterminated", "$'unterminated", `trailing\`, `$'\`, `$'\c`} {
		_, ok := unquote(bad)
		assert.False(t, ok, "%q", bad)
	}
	for q, want := range map[string]string{
		`$'\101\0\x41\u00e9\U0001F600'`: "A\x00Aé😀", `$'\cA\E\?\q'`: "\x01\x1b?\\q", `$'\uD800'`: "\uFFFD",
		`$'\x'`: `\x`, `a$'\n'b`: "a\nb",
	} {
		got, ok := unquote(q)
		assert.True(t, ok, q)
		assert.Equal(t, want, got, q)
	}
}
