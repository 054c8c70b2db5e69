//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var updateDocs = flag.Bool("update-docs", false, "rewrite the generated JSON sections of docs/cli.md and docs/mcp.md")

// The JSON objects of the commands (docs/cli.md) and the structured results of the tools
// (docs/mcp.md) are generated from their schemas: the commands' from the wire types, the
// tools' from the output schemas the server lists. A doc whose section differs fails the test;
// go test ./cmd/subkit -run TestDocsWire -update-docs rewrites it.
func TestDocsWire(t *testing.T) {
	cliRows := []struct {
		command string
		schema  *jsonschema.Schema
	}{
		{"`subkit exec --json`", schemaOf[execResult](t)},
		{"`subkit bash --json`", schemaOf[bashResult](t)},
		{"`subkit code --json`", schemaOf[codeResult](t)},
		{"`subkit code --cells FILE --json`", schemaOf[cellsOutput](t)},
		{"`subkit shell --script FILE --json`", schemaOf[shellOutput](t)},
		{"`subkit tree --json`", schemaOf[[]treeProc](t)},
		{"`subkit lsp --json`", schemaOf[lspOutput](t)},
		{"`subkit version --json`", schemaOf[versionOutput](t)},
		{"any command's `--json`, when it fails", schemaOf[errorOutput](t)},
	}
	var cli strings.Builder
	cli.WriteString("| command | JSON object |\n|---|---|\n")
	for _, r := range cliRows {
		b, err := json.Marshal(r.schema) // in field order
		require.NoError(t, err)
		fmt.Fprintf(&cli, "| %s | `%s` |\n", r.command, shapeOf(t, b))
	}
	checkDoc(t, "../../docs/cli.md", cli.String())

	c := mcpStart(t, "inprocess")
	res, err := c.ListTools(context.Background(), nil)
	require.NoError(t, err)
	var raw []byte // the tools/list answer as the server wrote it: its schemas in field order
	for _, line := range strings.Split(c.rpc.String(), "\n") {
		if msg, ok := strings.CutPrefix(line, "read: "); ok && strings.Contains(msg, `"tools":[`) {
			raw = []byte(msg)
		}
	}
	require.NotNil(t, raw, "the tools/list answer in the log")
	var list struct {
		Result struct {
			Tools []struct {
				Name         string          `json:"name"`
				OutputSchema json.RawMessage `json:"outputSchema"`
			} `json:"tools"`
		} `json:"result"`
	}
	require.NoError(t, json.Unmarshal(raw, &list))
	require.Len(t, list.Result.Tools, len(res.Tools))
	var mcpDoc strings.Builder
	mcpDoc.WriteString("| tool | structured content |\n|---|---|\n")
	for _, tool := range list.Result.Tools {
		fmt.Fprintf(&mcpDoc, "| `%s` | `%s` |\n", tool.Name, shapeOf(t, tool.OutputSchema))
	}
	checkDoc(t, "../../docs/mcp.md", mcpDoc.String())
}

func schemaOf[T any](t *testing.T) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	require.NoError(t, err)
	return s
}

const (
	docsBegin = "<!-- BEGIN JSON shapes: generated from the wire types by TestDocsWire (go test ./cmd/subkit -run TestDocsWire -update-docs); do not edit -->\n"
	docsEnd   = "<!-- END JSON shapes -->\n"
)

// checkDoc compares the generated section of the doc at path with want, or rewrites it.
func checkDoc(t *testing.T, path, want string) {
	t.Helper()
	doc, err := os.ReadFile(path)
	require.NoError(t, err)
	before, rest, ok1 := bytes.Cut(doc, []byte(docsBegin))
	_, after, ok2 := bytes.Cut(rest, []byte(docsEnd))
	require.True(t, ok1 && ok2, "%s lacks the markers of its generated section", path)
	got := slices.Concat(before, []byte(docsBegin), []byte(want), []byte(docsEnd), after)
	if *updateDocs {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	require.Equal(t, string(got), string(doc), "%s is out of date with the wire types: go test ./cmd/subkit -run TestDocsWire -update-docs", path)
}

// shapeOf renders a JSON schema as the keys of the objects it describes, in field order:
// {"a","b"?:{"c"},"d":[{"e"}]}, where ? marks a key left out when it does not apply, {...}
// an object shaped as the key's before it, and {NAME:VALUE} a map.
func shapeOf(t *testing.T, schema []byte) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(schema))
	v, err := decodeOrdered(dec)
	require.NoError(t, err)
	return shape(v)
}

// ordered is a JSON object with its keys in order.
type ordered struct {
	keys []string
	vals map[string]any
}

func decodeOrdered(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		o := &ordered{vals: map[string]any{}}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := decodeOrdered(dec)
			if err != nil {
				return nil, err
			}
			o.keys = append(o.keys, k.(string))
			o.vals[k.(string)] = v
		}
		_, err := dec.Token()
		return o, err
	case json.Delim('['):
		var list []any
		for dec.More() {
			v, err := decodeOrdered(dec)
			if err != nil {
				return nil, err
			}
			list = append(list, v)
		}
		_, err := dec.Token()
		return list, err
	}
	return tok, nil
}

// shape renders one schema: "" for a scalar.
func shape(v any) string {
	s, ok := v.(*ordered)
	if !ok {
		return ""
	}
	if items, ok := s.vals["items"]; ok {
		if inner := shape(items); inner != "" {
			return "[" + inner + "]"
		}
		return ""
	}
	props, ok := s.vals["properties"].(*ordered)
	if !ok {
		if _, isMap := s.vals["additionalProperties"].(*ordered); isMap {
			return "{NAME:VALUE}"
		}
		return ""
	}
	required := map[string]bool{}
	if list, ok := s.vals["required"].([]any); ok {
		for _, r := range list {
			required[r.(string)] = true
		}
	}
	var b strings.Builder
	b.WriteString("{")
	prev := ""
	for i, k := range props.keys {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "%q", k)
		if !required[k] {
			b.WriteString("?")
		}
		inner := shape(props.vals[k])
		if inner != "" {
			if inner == prev && len(inner) > len("{...}") {
				b.WriteString(":" + strings.Replace(inner, strings.Trim(inner, "[]"), "{...}", 1))
			} else {
				b.WriteString(":" + inner)
			}
		}
		prev = inner
	}
	b.WriteString("}")
	return b.String()
}

// Each command's -h names every key of its --json object; the sandbox object's are named by
// subkit exec's alone.
func TestHelpNamesEveryJSONKey(t *testing.T) {
	sandboxKeys := []string{"backend", "network", "how", "writable", "hidden", "allow", "deny", "network_refused", "unenforced"}
	for _, tc := range []struct {
		args   []string
		schema *jsonschema.Schema
		skip   []string // keys the help leaves to the docs
	}{
		{[]string{"exec", "-h"}, schemaOf[execResult](t), nil},
		{[]string{"exec", "-h"}, schemaOf[sandboxOutput](t), nil},
		{[]string{"bash", "-h"}, schemaOf[bashResult](t), sandboxKeys},
		{[]string{"code", "-h"}, schemaOf[codeResult](t), sandboxKeys},
		{[]string{"code", "-h"}, schemaOf[cellsOutput](t), []string{"id"}},
		{[]string{"shell", "-h"}, schemaOf[shellOutput](t), append([]string{"id"}, sandboxKeys...)},
		{[]string{"tree", "-h"}, schemaOf[[]treeProc](t), nil},
	} {
		code, out, _ := cli(t, "", tc.args...)
		require.Equal(t, 0, code)
		b, err := json.Marshal(tc.schema)
		require.NoError(t, err)
		for _, k := range slices.Compact(slices.Sorted(slices.Values(jsonKeys(shapeOf(t, b))))) {
			if !slices.Contains(tc.skip, k) {
				assert.Contains(t, out, `"`+k+`"`, "subkit %s does not name the key %q of its JSON", tc.args[0], k)
			}
		}
	}
}

// jsonKeys are the quoted keys of a shape.
func jsonKeys(shape string) []string {
	var keys []string
	for _, part := range strings.Split(shape, `"`)[1:] {
		if part != "" && strings.Trim(part, "abcdefghijklmnopqrstuvwxyz_") == "" {
			keys = append(keys, part)
		}
	}
	return keys
}
