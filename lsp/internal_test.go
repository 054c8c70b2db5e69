package lsp

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLookupSetting(t *testing.T) {
	s := map[string]any{
		"gopls":        map[string]any{"ui": map[string]any{"completion": map[string]any{"usePlaceholders": true}}},
		"dotted.key":   1,
		"scalar":       "x",
		"python.paths": []string{"a"},
	}
	assert.Equal(t, s["gopls"], lookupSetting(s, "gopls"))
	assert.Equal(t, map[string]any{"usePlaceholders": true}, lookupSetting(s, "gopls.ui.completion"))
	assert.Equal(t, true, lookupSetting(s, "gopls.ui.completion.usePlaceholders"))
	assert.Equal(t, 1, lookupSetting(s, "dotted.key"), "an exact key wins")
	assert.Equal(t, []string{"a"}, lookupSetting(s, "python.paths"))
	assert.Nil(t, lookupSetting(s, "absent"))
	assert.Nil(t, lookupSetting(s, "scalar.deeper"))
	assert.Nil(t, lookupSetting(s, "gopls.nope"))
	assert.Equal(t, s, lookupSetting(s, ""))
	assert.Nil(t, lookupSetting(nil, "gopls"))
	assert.Nil(t, lookupSetting(nil, ""))
}

func TestLastLines(t *testing.T) {
	assert.Equal(t, "", lastLines(nil, 3, 100))
	assert.Equal(t, "one", lastLines([]byte("one\n\n"), 3, 100))
	assert.Equal(t, "b\nc\nd", lastLines([]byte("a\nb\nc\nd\n"), 3, 100))
	assert.Equal(t, "a\nb", lastLines([]byte("a\nb"), 3, 100))
	assert.Equal(t, "xyz", lastLines([]byte("abcdefxyz"), 3, 3))
}
