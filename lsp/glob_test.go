package lsp

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGlob(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		yes, no []string
	}{
		{"**/*.go", []string{"/r/a.go", "a.go", "/r/x/y/b.go"}, []string{"/r/a.gox", "/r/a.mod"}},
		{"**/*.{go,mod}", []string{"/r/go.mod", "/r/x/a.go"}, []string{"/r/a.sum"}},
		{"*.py", []string{"a.py"}, []string{"x/a.py", "a.pyc"}},
		{"src/?.c", []string{"src/a.c"}, []string{"src/ab.c", "src/x/a.c"}},
		{"[ab].txt", []string{"a.txt", "b.txt"}, []string{"c.txt"}},
		{"[!ab].txt", []string{"c.txt"}, []string{"a.txt"}},
		{"**", []string{"a", "a/b/c"}, nil},
	} {
		g, err := compileGlob(tc.pattern)
		require.NoError(t, err, tc.pattern)
		for _, p := range tc.yes {
			assert.True(t, g.match(p), "%s should match %s", tc.pattern, p)
		}
		for _, p := range tc.no {
			assert.False(t, g.match(p), "%s should not match %s", tc.pattern, p)
		}
	}
	_, err := compileGlob("{a,b")
	assert.Error(t, err)
}

func TestWatchers(t *testing.T) {
	ws, err := parseWatchers(json.RawMessage(`{"watchers":[
		{"globPattern":"**/*.go"},
		{"globPattern":{"baseUri":"file:///root/sub","pattern":"**/*.py"},"kind":4},
		{"globPattern":{"baseUri":{"uri":"file:///root","name":"root"},"pattern":"go.mod"}},
		{"globPattern":"{bad"}]}`))
	require.Error(t, err, "the bad pattern is reported")
	require.Len(t, ws, 3)
	assert.True(t, ws[0].matches("/root/x/a.go", FileChanged))
	assert.False(t, ws[0].matches("/root/x/a.py", FileChanged))
	assert.True(t, ws[1].matches("/root/sub/x/a.py", FileDeleted))
	assert.False(t, ws[1].matches("/root/sub/x/a.py", FileChanged), "kind 4: deletions only")
	assert.False(t, ws[1].matches("/root/other/a.py", FileDeleted))
	assert.True(t, ws[2].matches("/root/go.mod", FileCreated))
	assert.False(t, ws[2].matches("/root/x/go.mod", FileCreated))
}
