package coderuntime

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/subprocess"
)

func TestTrimCut(t *testing.T) {
	cases := []struct {
		tail      string
		truncated bool
		want      string
	}{
		{"\x82\xacb", true, "b"},             // the end of a cut "€"
		{"\xac€", true, "€"},                 // one continuation byte
		{"\x9f\x8e\x89x", true, "x"},         // three: the end of a cut 4-byte character
		{"\x80\x80\x80\x80x", true, "\x80x"}, // more than a cut character: invalid bytes stay
		{"\xff\xfeok", true, "\xff\xfeok"},   // invalid lead bytes stay
		{"\x82\xacb", false, "\x82\xacb"},    // a whole stream is never trimmed
		{"é\xff", true, "é\xff"},             // the end is not a truncation edge
		{"", true, ""},
	}
	for _, c := range cases {
		got := output(subprocess.StreamResult{Tail: []byte(c.tail), Truncated: c.truncated, TotalBytes: 99})
		assert.Equal(t, c.want, got.Tail, "%q", c.tail)
		assert.EqualValues(t, 99, got.TotalBytes, "TotalBytes counts the stream, not the trimmed tail")
	}
}

func TestReadCodeError(t *testing.T) {
	ce, err := readCodeError(strings.NewReader(""), nil)
	assert.NoError(t, err, "an empty report: no error")
	assert.Nil(t, ce)

	ce, err = readCodeError(strings.NewReader(`{"name":"ValueError","value":"at /w/main.py","traceback":"File \"/w/main.py\", line 1"}`), []string{"/w/"})
	require.NoError(t, err)
	assert.Equal(t, &CodeError{Name: "ValueError", Value: "at main.py", Traceback: `File "main.py", line 1`}, ce)

	for _, bad := range []string{"not json", `{"value":"no name"}`, strings.Repeat(" ", maxErrorFile+1)} {
		ce, err = readCodeError(strings.NewReader(bad), nil)
		assert.Error(t, err)
		assert.Nil(t, ce)
	}
}
