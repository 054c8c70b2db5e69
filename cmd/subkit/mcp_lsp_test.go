//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lsp_diagnostics follows the disk: a dependency of the file asked about is edited on disk
// between calls, and the answer is that of the new dependency (gopls: lib.go changes what
// main.go may call; typescript-language-server: lib.ts, which an earlier call had open, is
// closed rather than left to hide the disk's copy).
func TestMcpLspFollowsTheDisk(t *testing.T) {
	gopls := findGoplsForCLI(t)
	tsls := findRepoTool(t, "SUBKIT_TSLS", ".bin/npm/node_modules/.bin/typescript-language-server", "npm")
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOTOOLCHAIN", "local")
	for _, tc := range []struct {
		name, server             string
		args                     []string
		files                    map[string]string
		main, lib, broken, fixed string
		message                  string
	}{
		{
			name: "gopls", server: gopls,
			files: map[string]string{"go.mod": "module example.com/hello\n\ngo 1.26\n", "main.go": "package main\n\nfunc main() { println(Foo()) }\n"},
			main:  "main.go", lib: "lib.go",
			fixed: "package main\n\nfunc Foo() int { return 1 }\n", broken: "package main\n\nfunc Bar() int { return 1 }\n",
			message: "undefined: Foo",
		},
		{
			name: "typescript-language-server", server: tsls, args: []string{"--stdio"},
			files: map[string]string{"main.ts": "import { foo } from \"./lib\";\nexport const n: number = foo();\n"},
			main:  "main.ts", lib: "lib.ts",
			fixed: "export function foo(): number { return 1; }\n", broken: "export function foo(): string { return \"x\"; }\n",
			message: "Type 'string' is not assignable to type 'number'",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for name, text := range tc.files {
				require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(text), 0o644))
			}
			lib := filepath.Join(root, tc.lib)
			require.NoError(t, os.WriteFile(lib, []byte(tc.fixed), 0o644))
			c := mcpStart(t, "inprocess")
			server := append([]any{tc.server}, anySlice(tc.args)...)
			call := func(files ...string) fileDiagOut {
				var out lspDiagnosticsOut
				text := c.callOK(t, "lsp_diagnostics", map[string]any{"files": anySlice(files), "root": root, "server": server}, &out)
				require.Len(t, out.Files, len(files), text)
				require.True(t, out.Files[0].Complete, text)
				return out.Files[0]
			}
			f := call(tc.main, tc.lib) // both open now
			assert.Empty(t, f.Diagnostics)

			require.NoError(t, os.WriteFile(lib, []byte(tc.broken), 0o644))
			f = call(tc.main)
			require.Len(t, f.Diagnostics, 1, "%+v", f)
			assert.Contains(t, f.Diagnostics[0].Message, tc.message)

			require.NoError(t, os.WriteFile(lib, []byte(tc.fixed), 0o644))
			f = call(tc.main)
			assert.Empty(t, f.Diagnostics, "%+v", f)
		})
	}
}

func anySlice(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// The symbol tools on gopls, across two files: definition by position and by name,
// references, hover, symbols of a file and of the workspace, and a rename written to disk
// after which the module still builds.
func TestMcpLspSymbolTools(t *testing.T) {
	gopls := findGoplsForCLI(t)
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOTOOLCHAIN", "local")
	root := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":  "module example.com/hello\n\ngo 1.26\n",
		"lib.go":  "package main\n\n// Greet greets.\nfunc Greet(name string) string { return \"hi \" + name }\n",
		"main.go": "package main\n\nfunc main() {\n\tprintln(Greet(\"x\"))\n\tprintln(Greet(\"y\"))\n}\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(text), 0o644))
	}
	c := mcpStart(t, "inprocess", "--lsp", ".go="+gopls)
	def := locationOut{Path: "lib.go", Line: 4, Column: 6, EndLine: 4, EndColumn: 11, Text: `func Greet(name string) string { return "hi " + name }`}

	var locs lspLocationsOut
	text := c.callOK(t, "lsp_definition", map[string]any{"file": "main.go", "symbol": "Greet", "root": root}, &locs)
	assert.Equal(t, []locationOut{def}, locs.Locations, text)
	assert.Contains(t, text, "lib.go:4:6: func Greet")
	assert.Equal(t, "gopls", locs.Server.Name)
	c.callOK(t, "lsp_definition", map[string]any{"file": "main.go", "line": 4, "column": 11, "root": root}, &locs)
	assert.Equal(t, []locationOut{def}, locs.Locations)

	text = c.callOK(t, "lsp_references", map[string]any{"file": "lib.go", "symbol": "Greet", "root": root}, &locs)
	require.Len(t, locs.Locations, 3, text)
	assert.Equal(t, def, locs.Locations[0])
	assert.Equal(t, locationOut{Path: "main.go", Line: 4, Column: 10, EndLine: 4, EndColumn: 15, Text: `println(Greet("x"))`}, locs.Locations[1])
	c.callOK(t, "lsp_references", map[string]any{"file": "lib.go", "symbol": "Greet", "root": root, "exclude_declaration": true}, &locs)
	assert.Len(t, locs.Locations, 2)

	var hover lspHoverOut
	c.callOK(t, "lsp_hover", map[string]any{"file": "main.go", "symbol": "Greet", "root": root}, &hover)
	assert.Contains(t, hover.Text, "func Greet(name string) string")
	assert.Contains(t, hover.Text, "Greet greets.")

	var syms lspSymbolsOut
	c.callOK(t, "lsp_symbols", map[string]any{"file": "lib.go", "root": root}, &syms)
	require.Len(t, syms.Symbols, 1)
	assert.Equal(t, symbolOut{Name: "Greet", Kind: "function", Detail: "func(name string) string", Location: def}, syms.Symbols[0])
	c.callOK(t, "lsp_symbols", map[string]any{"query": "Greet", "root": root, "server": []any{gopls}}, &syms)
	require.NotEmpty(t, syms.Symbols)
	assert.Equal(t, "Greet", syms.Symbols[0].Name)
	assert.Equal(t, "lib.go", syms.Symbols[0].Location.Path)
	c.callOK(t, "lsp_definition", map[string]any{"symbol": "Greet", "root": root, "server": []any{gopls}}, &locs)
	assert.Equal(t, []locationOut{def}, locs.Locations, "a symbol's name alone, found among the workspace's symbols")

	var ren lspRenameOut
	text = c.callOK(t, "lsp_rename", map[string]any{"file": "main.go", "symbol": "Greet", "new_name": "Salute", "root": root}, &ren)
	assert.ElementsMatch(t, []string{"lib.go", "main.go"}, ren.Files, text)
	assert.GreaterOrEqual(t, ren.Edits, 3, "the definition and two calls (gopls renames the doc comment too)")
	for _, f := range []string{"lib.go", "main.go"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		require.NoError(t, err)
		assert.Contains(t, string(b), "Salute(")
		assert.NotContains(t, string(b), "Greet(")
	}
	vet := exec.Command("go", "vet", "./...")
	vet.Dir = root
	out, err := vet.CombinedOutput()
	assert.NoError(t, err, "go vet after the rename: %s", out)
	var diags lspDiagnosticsOut
	c.callOK(t, "lsp_diagnostics", map[string]any{"files": []any{"main.go"}, "root": root}, &diags)
	assert.Empty(t, diags.Files[0].Diagnostics, "the server sees the renamed files")

	for _, bad := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"lsp_definition", map[string]any{"file": "main.go", "root": root}, "line and column"},
		{"lsp_definition", map[string]any{"file": "main.go", "symbol": "Nope", "root": root}, `symbol "Nope" does not appear`},
		{"lsp_definition", map[string]any{"file": "main.go", "line": 99, "column": 1, "root": root}, "line 99"},
		{"lsp_rename", map[string]any{"file": "main.go", "symbol": "Salute", "root": root}, "new_name"},
		{"lsp_rename", map[string]any{"file": "main.go", "symbol": "Salute", "root": root, "new_name": ""}, "new_name is empty"},
		{"lsp_symbols", map[string]any{"root": root}, "give file"},
		{"lsp_hover", map[string]any{"symbol": "x", "root": root}, "pass \"server\""},
	} {
		assert.Contains(t, c.callErr(t, bad.tool, bad.args), bad.want, "%s %v", bad.tool, bad.args)
	}
}
