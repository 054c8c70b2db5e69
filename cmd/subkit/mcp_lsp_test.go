//go:build unix

package main

import (
	"os"
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
