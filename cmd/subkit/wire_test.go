//go:build unix

package main

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The --json of a command and the structured result of its MCP tool are one vocabulary: the
// keys a command prints are the properties of the tool's output schema, and the other way
// round (but for the ones left out when empty, which say so).
func TestWireSameForCLIAndMCP(t *testing.T) {
	c := mcpStart(t, "inprocess")
	res, err := c.ListTools(context.Background(), nil)
	require.NoError(t, err)
	schema := func(tool string, path ...string) map[string]any {
		i := slices.IndexFunc(res.Tools, func(x *mcp.Tool) bool { return x.Name == tool })
		require.GreaterOrEqual(t, i, 0, tool)
		s := res.Tools[i].OutputSchema.(map[string]any)
		for _, p := range path {
			s = s["properties"].(map[string]any)[p].(map[string]any)
			if items, ok := s["items"].(map[string]any); ok {
				s = items
			}
		}
		return s["properties"].(map[string]any)
	}
	omitted := map[string]bool{"sandbox": true, "error": true, "interpreter_exit": true, "input": true, "screen": true, "mime": true, "id": true, "background": true}
	for _, tc := range []struct {
		name  string
		args  []string
		tool  string
		path  []string // to the object in the tool's result
		inCLI []string // to the object in the command's output
	}{
		{"exec/bash", []string{"exec", "--json", "--", "true"}, "bash", nil, nil},
		{"bash", []string{"bash", "--json", "true"}, "bash", nil, nil},
		{"code", []string{"code", "--lang", "bash", "--json", "true"}, "code_run", nil, nil},
		{"stream", []string{"bash", "--json", "true"}, "bash", []string{"stdout"}, []string{"stdout"}},
		{"tree", []string{"tree", "--json", "1"}, "process_tree", []string{"processes"}, []string{"0"}},
		{"cells", []string{"code", "--lang", "python3", "--json", "--cells", writeFile(t, "c.py", "1\n")}, "code_session_run", nil, []string{"executions", "0"}},
		{"cell results", []string{"code", "--lang", "python3", "--json", "--cells", writeFile(t, "c.py", "1\n")}, "code_session_run", []string{"results"}, []string{"executions", "0", "results", "0"}},
		{"shell", []string{"shell", "--json", "--script", writeFile(t, "s", "true\n")}, "shell_run", nil, []string{"steps", "0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := cli(t, "", tc.args...)
			require.Equal(t, 0, code, errOut)
			var v any
			require.NoError(t, json.Unmarshal([]byte(out), &v))
			for _, p := range tc.inCLI {
				switch x := v.(type) {
				case map[string]any:
					v = x[p]
				case []any:
					v = x[0]
				}
			}
			got := v.(map[string]any)
			props := schema(tc.tool, tc.path...)
			for k := range got {
				assert.Contains(t, props, k, "%s prints %q, which %s's result lacks", tc.args[0], k, tc.tool)
			}
			for _, k := range slices.Sorted(maps.Keys(props)) {
				if _, ok := got[k]; !ok && !omitted[k] && tc.name != "exec/bash" {
					assert.Fail(t, "missing", "%s's result has %q, which %s --json lacks", tc.tool, k, tc.args[0])
				}
			}
		})
	}
}
