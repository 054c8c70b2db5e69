//go:build unix

package main

import (
	"context"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/modelenv"
)

// subkit bash's help and the bash tool's description name every variable the bash executor
// sets for the model.
func TestBashEnvDocumented(t *testing.T) {
	code, out, _ := cli(t, "", "bash", "-h")
	require.Equal(t, 0, code)
	c := mcpStart(t, "inprocess")
	res, err := c.ListTools(context.Background(), nil)
	require.NoError(t, err)
	i := slices.IndexFunc(res.Tools, func(x *mcp.Tool) bool { return x.Name == "bash" })
	require.GreaterOrEqual(t, i, 0)
	for _, kv := range append(modelenv.Pipes(), "PYTHONUNBUFFERED=1") {
		assert.Contains(t, out, kv, "subkit bash -h")
		assert.Contains(t, res.Tools[i].Description, kv, "the bash tool's description")
	}
}
