package lsp_test

import (
	"math/rand/v2"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/lsp"
	"github.com/subkit/subkit/subprocess"
)

var encodings = []lsp.PositionEncoding{lsp.UTF16, lsp.UTF8, lsp.UTF32}

// oracle computes the position of offset by another route: the line by counting breaks, the
// character by encoding the line's prefix with the standard library.
func oracle(text []byte, offset int, enc lsp.PositionEncoding) lsp.Position {
	line, start := 0, 0
	for i := 0; i < offset; i++ {
		switch {
		case text[i] == '\n', text[i] == '\r' && (i+1 >= len(text) || text[i+1] != '\n'):
			line, start = line+1, i+1
		}
	}
	prefix := text[start:offset]
	switch enc {
	case lsp.UTF8:
		return lsp.Position{Line: line, Character: len(prefix)}
	case lsp.UTF32:
		return lsp.Position{Line: line, Character: utf8.RuneCount(prefix)}
	}
	return lsp.Position{Line: line, Character: len(utf16.Encode([]rune(string(prefix))))}
}

// boundary says whether offset is a place a position can name: not inside a character, not
// between the \r and \n of a line break.
func boundary(text []byte, offset int) bool {
	if offset == 0 || offset == len(text) {
		return true
	}
	if text[offset-1] == '\r' && text[offset] == '\n' {
		return false
	}
	for i := 0; i < offset; {
		_, n := utf8.DecodeRune(text[i:])
		if i+n > offset {
			return false
		}
		i += n
	}
	return true
}

// checkRoundTrip checks both helpers at every offset of text, for every encoding.
func checkRoundTrip(t *testing.T, text []byte) {
	t.Helper()
	for _, enc := range encodings {
		for off := 0; off <= len(text); off++ {
			pos, err := lsp.OffsetToPosition(text, off, enc)
			if !boundary(text, off) {
				require.ErrorIs(t, err, lsp.ErrPosition, "%q at %d (%s)", text, off, enc)
				continue
			}
			require.NoError(t, err, "%q at %d (%s)", text, off, enc)
			require.Equal(t, oracle(text, off, enc), pos, "%q at %d (%s)", text, off, enc)
			back, err := lsp.PositionToOffset(text, pos, enc)
			require.NoError(t, err, "%q at %v (%s)", text, pos, enc)
			require.Equal(t, off, back, "%q: %d -> %v -> %d (%s)", text, off, pos, back, enc)
		}
	}
}

// The round trip over random texts of ASCII, 2- and 3-byte characters, astral characters
// (two UTF-16 units), every kind of line break and a byte that is not UTF-8.
func TestPositionRoundTrip(t *testing.T) {
	pieces := []string{"a", "z", " ", "ü", "€", "中", "😀", "𝄞", "\n", "\r\n", "\r", "\xff", "é"}
	r := rand.New(rand.NewPCG(1, 2)) // fixed seed: the same texts every run
	for range 400 {
		var b []byte
		for range r.IntN(24) {
			b = append(b, pieces[r.IntN(len(pieces))]...)
		}
		checkRoundTrip(t, b)
	}
}

func FuzzPositionRoundTrip(f *testing.F) {
	for _, s := range []string{"", "a", "ü😀y\r\nlast", "\r\r\n\n", "x\xff\xfe😀", "中\r€"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		if len(text) > 256 {
			text = text[:256]
		}
		checkRoundTrip(t, text)
	})
}

func TestPositionHelpers(t *testing.T) {
	text := []byte("xü😀y\r\nab")
	// A Character past the end of its line means the end of the line.
	off, err := lsp.PositionToOffset(text, lsp.Position{Line: 0, Character: 99}, lsp.UTF16)
	require.NoError(t, err)
	assert.Equal(t, 8, off)
	// Splitting the surrogate pair of 😀 (UTF-16 units 2 and 3), or a UTF-8 sequence.
	_, err = lsp.PositionToOffset(text, lsp.Position{Line: 0, Character: 3}, lsp.UTF16)
	assert.ErrorIs(t, err, lsp.ErrPosition)
	_, err = lsp.PositionToOffset(text, lsp.Position{Line: 0, Character: 2}, lsp.UTF8)
	assert.ErrorIs(t, err, lsp.ErrPosition)
	for _, p := range []lsp.Position{{Line: 2}, {Line: -1}, {Character: -1}} {
		_, err = lsp.PositionToOffset(text, p, lsp.UTF16)
		assert.ErrorIs(t, err, lsp.ErrPosition, "%v", p)
	}
	for _, o := range []int{-1, len(text) + 1} {
		_, err = lsp.OffsetToPosition(text, o, lsp.UTF16)
		assert.ErrorIs(t, err, lsp.ErrPosition, "%d", o)
	}
	_, err = lsp.OffsetToPosition(text, 0, "utf-7")
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	_, err = lsp.PositionToOffset(text, lsp.Position{}, "utf-7")
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	// The zero encoding is UTF-16.
	p, err := lsp.OffsetToPosition(text, 8, "")
	require.NoError(t, err)
	assert.Equal(t, lsp.Position{Character: 5}, p)
	// Byte columns back from positions, and 1-based columns to positions.
	col, err := lsp.CharacterColumn(text, lsp.Position{Line: 0, Character: 5}, lsp.UTF16)
	require.NoError(t, err)
	assert.Equal(t, 8, col)
	col, err = lsp.CharacterColumn(text, lsp.Position{Line: 1, Character: 1}, lsp.UTF8)
	require.NoError(t, err)
	assert.Equal(t, 1, col)
	p, err = lsp.PositionIn(text, 1, 8, lsp.UTF8)
	require.NoError(t, err)
	assert.Equal(t, lsp.Position{Character: 7}, p)
	p, err = lsp.PositionIn(text, 1, 8, lsp.UTF32)
	require.NoError(t, err)
	assert.Equal(t, lsp.Position{Character: 3}, p)
	_, err = lsp.PositionIn(text, 3, 1, lsp.UTF16)
	assert.ErrorIs(t, err, lsp.ErrPosition)
}
