package lsp

import (
	"bytes"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// PositionEncoding is the unit a Position's Character counts, as negotiated in initialize
// (the client offers general.positionEncodings, the server answers capabilities.positionEncoding;
// clangd before version 15 uses its offsetEncoding extension instead). The zero value is UTF-16,
// the protocol's default.
type PositionEncoding string

const (
	// UTF16 counts UTF-16 code units: a character outside the Basic Multilingual Plane (an
	// emoji) counts 2. The default of the protocol and of every server.
	UTF16 PositionEncoding = "utf-16"
	// UTF8 counts bytes of UTF-8, as Go strings and compilers' columns do.
	UTF8 PositionEncoding = "utf-8"
	// UTF32 counts Unicode code points (runes).
	UTF32 PositionEncoding = "utf-32"
)

func (e PositionEncoding) orDefault() PositionEncoding {
	if e == "" {
		return UTF16
	}
	return e
}

func (e PositionEncoding) check() error {
	switch e.orDefault() {
	case UTF16, UTF8, UTF32:
		return nil
	}
	return invalidArg("position encoding", strconv.Quote(string(e)), fmt.Sprintf("want %q, %q or %q", UTF8, UTF16, UTF32))
}

// units is how many units of e the rune r, n bytes long in text, counts. Bytes that are not
// UTF-8 count as one rune each (utf8.RuneError, one UTF-16 unit), as editors decode them.
func (e PositionEncoding) units(r rune, n int) int {
	switch e {
	case UTF8:
		return n
	case UTF32:
		return 1
	}
	if r >= 0x10000 && n == 4 {
		return 2
	}
	return 1
}

// lineBounds returns the byte offsets of the start and end (before its line break) of line
// number line (from 0) of text. Lines end at "\n", "\r\n" or "\r", as the protocol says.
func lineBounds(text []byte, line int) (start, end int, ok bool) {
	for i := 0; i < line; i++ {
		j := bytes.IndexAny(text[start:], "\r\n")
		if j < 0 {
			return 0, 0, false
		}
		start += j
		if text[start] == '\r' && start+1 < len(text) && text[start+1] == '\n' {
			start++
		}
		start++
	}
	end = len(text)
	if j := bytes.IndexAny(text[start:], "\r\n"); j >= 0 {
		end = start + j
	}
	return start, end, true
}

// OffsetToPosition converts a byte offset into text to a Position whose Character counts
// units of enc (the zero value: UTF-16). offset may be len(text). It fails with ErrPosition
// when offset is outside the text, inside a multi-byte character or between the "\r" and "\n"
// of a line break.
func OffsetToPosition(text []byte, offset int, enc PositionEncoding) (Position, error) {
	if err := enc.check(); err != nil {
		return Position{}, err
	}
	enc = enc.orDefault()
	if offset < 0 || offset > len(text) {
		return Position{}, fmt.Errorf("%w: offset %d of a %d-byte text", ErrPosition, offset, len(text))
	}
	line, start := 0, 0
	for {
		j := bytes.IndexAny(text[start:offset], "\r\n")
		if j < 0 {
			break
		}
		next := start + j + 1
		if text[start+j] == '\r' && next < len(text) && text[next] == '\n' {
			if next == offset {
				return Position{}, fmt.Errorf("%w: offset %d is inside a \\r\\n line break", ErrPosition, offset)
			}
			next++
		}
		line, start = line+1, next
	}
	char := 0
	for i := start; i < offset; {
		r, n := utf8.DecodeRune(text[i:])
		if i+n > offset {
			return Position{}, fmt.Errorf("%w: offset %d is inside a %d-byte character", ErrPosition, offset, n)
		}
		char += enc.units(r, n)
		i += n
	}
	return Position{Line: line, Character: char}, nil
}

// PositionToOffset converts a Position whose Character counts units of enc (the zero value:
// UTF-16) to a byte offset into text. As the protocol says, a Character past the end of its
// line means the end of the line (before its line break). It fails with ErrPosition for a
// negative position, a line past the last one, or a Character that splits a character (the
// middle of a UTF-16 surrogate pair, the middle of a UTF-8 sequence).
func PositionToOffset(text []byte, pos Position, enc PositionEncoding) (int, error) {
	if err := enc.check(); err != nil {
		return 0, err
	}
	enc = enc.orDefault()
	if pos.Line < 0 || pos.Character < 0 {
		return 0, fmt.Errorf("%w: %d:%d is negative", ErrPosition, pos.Line, pos.Character)
	}
	start, end, ok := lineBounds(text, pos.Line)
	if !ok {
		return 0, fmt.Errorf("%w: line %d of a text with fewer lines", ErrPosition, pos.Line)
	}
	units, i := 0, start
	for i < end && units < pos.Character {
		r, n := utf8.DecodeRune(text[i:end])
		u := enc.units(r, n)
		if units+u > pos.Character {
			return 0, fmt.Errorf("%w: character %d of line %d is inside a character (%s)", ErrPosition, pos.Character, pos.Line, enc)
		}
		units += u
		i += n
	}
	return i, nil
}

// CharacterColumn converts a Character of line pos.Line (in units of enc) to the zero-based
// byte column of that line: the inverse of what PositionFor does for UTF-16.
func CharacterColumn(text []byte, pos Position, enc PositionEncoding) (int, error) {
	off, err := PositionToOffset(text, pos, enc)
	if err != nil {
		return 0, err
	}
	start, _, _ := lineBounds(text, pos.Line)
	return off - start, nil
}

// PositionIn converts a 1-based line and 1-based byte column (as compilers print them) in
// text to a Position in units of enc. col may be one past the end of the line.
func PositionIn(text []byte, line, col int, enc PositionEncoding) (Position, error) {
	if line < 1 || col < 1 {
		return Position{}, fmt.Errorf("%w: line %d, column %d: both start at 1", ErrPosition, line, col)
	}
	start, end, ok := lineBounds(text, line-1)
	if !ok {
		return Position{}, fmt.Errorf("%w: line %d of a text with fewer lines", ErrPosition, line)
	}
	if col-1 > end-start {
		return Position{}, fmt.Errorf("%w: column %d of line %d, which has %d bytes", ErrPosition, col, line, end-start)
	}
	return OffsetToPosition(text, start+col-1, enc)
}
