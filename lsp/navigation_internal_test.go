package lsp

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeLocations(t *testing.T) {
	r := Range{Start: Position{Line: 1, Character: 2}, End: Position{Line: 1, Character: 5}}
	whole := Range{Start: Position{Line: 0}, End: Position{Line: 3}}
	for _, tc := range []struct {
		raw  string
		want []Location
	}{
		{`null`, []Location{}},
		{`[]`, []Location{}},
		{`{"uri":"file:///a","range":{"start":{"line":1,"character":2},"end":{"line":1,"character":5}}}`, []Location{{URI: "file:///a", Range: r}}},
		{`[{"uri":"file:///a","range":{"start":{"line":1,"character":2},"end":{"line":1,"character":5}}}]`, []Location{{URI: "file:///a", Range: r}}},
		{`[{"targetUri":"file:///b","targetRange":` + mustJSON(whole) + `,"targetSelectionRange":` + mustJSON(r) + `}]`, []Location{{URI: "file:///b", Range: r}}},
	} {
		got, err := decodeLocations(json.RawMessage(tc.raw))
		require.NoError(t, err, tc.raw)
		assert.Equal(t, tc.want, got, tc.raw)
	}
	_, err := decodeLocations(json.RawMessage(`"nope"`))
	assert.Error(t, err)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestNestSymbols(t *testing.T) {
	rng := func(a, b int) Range { return Range{Start: Position{Line: a}, End: Position{Line: b}} }
	var out []DocumentSymbol
	for _, s := range []DocumentSymbol{
		{Name: "T", Range: rng(0, 10)}, {Name: "T.m", Range: rng(1, 3)}, {Name: "T.m.x", Range: rng(2, 2)}, {Name: "f", Range: rng(11, 12)},
	} {
		out = nestSymbol(out, s)
	}
	require.Len(t, out, 2)
	assert.Equal(t, "T", out[0].Name)
	require.Len(t, out[0].Children, 1)
	assert.Equal(t, "T.m", out[0].Children[0].Name)
	require.Len(t, out[0].Children[0].Children, 1)
	assert.Equal(t, "f", out[1].Name)
}

func TestApplyTextEdits(t *testing.T) {
	text := []byte("héllo\nwörld\n")
	pos := func(l, c int) Position { return Position{Line: l, Character: c} }
	got, err := applyTextEdits(text, []TextEdit{
		{Range: Range{Start: pos(1, 0), End: pos(1, 5)}, NewText: "there"},
		{Range: Range{Start: pos(0, 0), End: pos(0, 0)}, NewText: "<"},
		{Range: Range{Start: pos(0, 0), End: pos(0, 0)}, NewText: ">"},
		{Range: Range{Start: pos(0, 1), End: pos(0, 2)}, NewText: "e"},
	}, UTF16)
	require.NoError(t, err)
	assert.Equal(t, "<>hello\nthere\n", string(got), "ranges against the original text; inserts at one position in order")
	_, err = applyTextEdits(text, []TextEdit{
		{Range: Range{Start: pos(0, 0), End: pos(0, 3)}}, {Range: Range{Start: pos(0, 2), End: pos(0, 4)}},
	}, UTF16)
	assert.ErrorIs(t, err, ErrBadEdit)
	_, err = applyTextEdits(text, []TextEdit{{Range: Range{Start: pos(5, 0), End: pos(5, 0)}}}, UTF16)
	assert.ErrorIs(t, err, ErrPosition)
}

func TestDocumentChangeJSON(t *testing.T) {
	raw := `[{"textDocument":{"uri":"file:///a","version":3},"edits":[{"range":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}},"newText":"x"}]},
		{"kind":"create","uri":"file:///b","options":{"ignoreIfExists":true}},
		{"kind":"rename","oldUri":"file:///b","newUri":"file:///c"},
		{"kind":"delete","uri":"file:///c","options":{"recursive":true}}]`
	var dcs []DocumentChange
	require.NoError(t, json.Unmarshal([]byte(raw), &dcs))
	require.Len(t, dcs, 4)
	assert.Equal(t, "", dcs[0].Kind)
	assert.Equal(t, 3, *dcs[0].TextDocument.Version)
	assert.Equal(t, "create", dcs[1].Kind)
	assert.True(t, dcs[1].Options.IgnoreIfExists)
	assert.Equal(t, "file:///c", dcs[2].NewURI)
	back, err := json.Marshal(dcs)
	require.NoError(t, err)
	assert.JSONEq(t, raw, string(back))
	assert.Error(t, json.Unmarshal([]byte(`{"kind":"explode"}`), &DocumentChange{}))
}

func TestReplaceBytes(t *testing.T) {
	b := []byte("hello world")
	b = replaceBytes(b, 6, 11, "there, you")
	assert.Equal(t, "hello there, you", string(b))
	b = replaceBytes(b, 0, 6, "")
	assert.Equal(t, "there, you", string(b))
	b = replaceBytes(b, 5, 5, "!")
	assert.Equal(t, "there!, you", string(b))
	b = replaceBytes(b, 0, len(b), "x")
	assert.Equal(t, "x", string(b))
}
