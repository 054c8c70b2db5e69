package lsp_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/lsp"
)

// navServer is a real server with a project of two files: lib defines a function, main calls
// it twice.
type navServer struct {
	name     string
	find     func(t *testing.T) lsp.Config
	files    map[string]string
	open     []string // opened, in order; the first is main, the one asked about
	lib      string   // where the function is defined
	symbol   string   // the function's name (its first use in main is asked about)
	defLine  int      // the 0-based line of the definition in lib
	refs     int      // references with the declaration
	refFiles []string // files the references are in
	builds   func(t *testing.T, root string)
	tweak    func(cfg *lsp.Config)
}

var navServers = []navServer{
	{
		name: "gopls", find: realServers[0].find,
		files: map[string]string{
			"go.mod":  "module example.com/hello\n\ngo 1.26\n",
			"lib.go":  "package main\n\n// Greet greets.\nfunc Greet(name string) string { return \"hi \" + name }\n",
			"main.go": "package main\n\nfunc main() {\n\tprintln(Greet(\"x\"))\n\tprintln(Greet(\"y\"))\n}\n",
		},
		open: []string{"main.go"}, lib: "lib.go", symbol: "Greet", defLine: 3, refs: 3, refFiles: []string{"lib.go", "main.go"},
		builds: func(t *testing.T, root string) {
			cmd := exec.Command("go", "vet", "./...")
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "GOPROXY=off", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod")
			out, err := cmd.CombinedOutput()
			assert.NoError(t, err, "go vet after the rename: %s", out)
		},
	},
	{
		name: "pyright", find: realServers[1].find,
		files: map[string]string{
			"lib.py":  "def greet(name: str) -> str:\n    return \"hi \" + name\n",
			"main.py": "from lib import greet\n\nprint(greet(\"x\"))\nprint(greet(\"y\"))\n",
		},
		open: []string{"main.py"}, lib: "lib.py", symbol: "greet(", defLine: 0, refs: 4, refFiles: []string{"lib.py", "main.py"},
	},
	{
		name: "typescript-language-server", find: realServers[2].find,
		files: map[string]string{
			"lib.ts":  "export function greet(name: string): string { return \"hi \" + name; }\n",
			"main.ts": "import { greet } from \"./lib\";\nexport const a = greet(\"x\");\nexport const b = greet(\"y\");\n",
		},
		open: []string{"main.ts"}, lib: "lib.ts", symbol: "greet(", defLine: 0, refs: 4, refFiles: []string{"lib.ts", "main.ts"},
		// Rename the function itself, not only the local name of its import.
		tweak: func(cfg *lsp.Config) {
			opts, _ := cfg.InitializationOptions.(map[string]any)
			if opts == nil {
				opts = map[string]any{}
			}
			opts["preferences"] = map[string]any{"providePrefixAndSuffixTextForRename": false}
			cfg.InitializationOptions = opts
		},
		builds: func(t *testing.T, root string) {
			tsc := filepath.Join(repoRoot(), ".bin", "npm", "node_modules", ".bin", "tsc")
			cmd := exec.Command(tsc, "--noEmit", "--strict", "main.ts", "lib.ts")
			cmd.Dir = root
			out, err := cmd.CombinedOutput()
			assert.NoError(t, err, "tsc after the rename: %s", out)
		},
	},
	{
		name: "clangd", find: realServers[3].find,
		files: map[string]string{
			"lib.h":             "int greet(int n);\n",
			"lib.c":             "#include \"lib.h\"\n\nint greet(int n) { return n + 1; }\n",
			"main.c":            "#include \"lib.h\"\n\nint main(void) {\n  return greet(1) + greet(2);\n}\n",
			"compile_flags.txt": "-xc\n",
		},
		open: []string{"main.c", "lib.c", "lib.h"}, lib: "lib.c", symbol: "greet(", defLine: 2, refs: 4, refFiles: []string{"lib.c", "lib.h", "main.c"},
	},
}

// Definition, references and rename across two files on each real server, after the
// readiness wait; the rename is applied on disk and the project still builds (gopls, tsc).
func TestNavigationRealServers(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the test servers are installed on Linux and macOS")
	}
	for _, srv := range navServers {
		t.Run(srv.name, func(t *testing.T) {
			cfg := srv.find(t)
			cfg.Grace, cfg.ShutdownTimeout = 20*time.Second, 30*time.Second
			if srv.tweak != nil {
				srv.tweak(&cfg)
			}
			e := newEnv(t)
			root := t.TempDir()
			for name, text := range srv.files {
				writeFile(t, root, name, text)
			}
			cfg.Root = root
			cfg.Handlers = map[string]lsp.RequestHandler{"workspace/applyEdit": lsp.ApplyEditHandler}
			c, err := lsp.Start(ctxT(t, 60*time.Second), e.svc, cfg)
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			var uris []string
			for _, f := range srv.open {
				uri, err := openFile(ctxT(t, 10*time.Second), c, f)
				require.NoError(t, err)
				uris = append(uris, uri)
			}
			for _, uri := range uris {
				require.NoError(t, c.WaitReady(ctxT(t, 90*time.Second), uri))
			}
			main := srv.files[srv.open[0]]
			at, err := lsp.OffsetToPosition([]byte(main), strings.Index(main, srv.symbol)+1, c.PositionEncoding())
			require.NoError(t, err)

			defs, err := c.Definition(ctxT(t, 30*time.Second), uris[0], at)
			require.NoError(t, err)
			require.NotEmpty(t, defs)
			assert.Equal(t, lsp.FileURI(filepath.Join(root, srv.lib)), defs[0].URI, "%+v", defs)
			assert.Equal(t, srv.defLine, defs[0].Range.Start.Line, "%+v", defs)

			refs, err := c.References(ctxT(t, 30*time.Second), uris[0], at, true)
			require.NoError(t, err)
			assert.Len(t, refs, srv.refs, "right after the readiness wait, every reference: %+v", refs)
			var files []string
			for _, r := range refs {
				p, err := lsp.URIToPath(r.URI)
				require.NoError(t, err)
				if f := filepath.Base(p); !contains(files, f) {
					files = append(files, f)
				}
			}
			assert.ElementsMatch(t, srv.refFiles, files)

			name := strings.TrimSuffix(srv.symbol, "(")
			h, err := c.Hover(ctxT(t, 30*time.Second), uris[0], at)
			require.NoError(t, err)
			require.NotNil(t, h)
			assert.Contains(t, h.Text(), name)

			ws, err := c.WorkspaceSymbols(ctxT(t, 30*time.Second), name)
			require.NoError(t, err)
			assert.True(t, slices.ContainsFunc(ws, func(s lsp.SymbolInformation) bool {
				return s.Name == name && s.Location.URI == lsp.FileURI(filepath.Join(root, srv.lib))
			}), "workspace symbols for %q: %+v", name, ws)
			syms, err := c.DocumentSymbols(ctxT(t, 30*time.Second), uris[0])
			require.NoError(t, err)
			t.Logf("%s: document symbols of %s: %+v", srv.name, srv.open[0], syms)

			edit, err := c.Rename(ctxT(t, 30*time.Second), uris[0], at, "salute")
			require.NoError(t, err)
			res, err := c.ApplyEdit(ctxT(t, 30*time.Second), edit)
			require.NoError(t, err)
			var changed []string
			for _, p := range res.Files() {
				changed = append(changed, filepath.Base(p))
			}
			assert.Subset(t, changed, srv.refFiles, "every file with a reference is rewritten")
			for _, f := range srv.refFiles {
				b, err := os.ReadFile(filepath.Join(root, f))
				require.NoError(t, err)
				assert.NotContains(t, string(b), name, f)
				assert.Contains(t, string(b), "salute", f)
			}
			doc, ok := c.Document(uris[0])
			require.True(t, ok)
			assert.Contains(t, doc.Text, "salute", "the open document follows the edit")
			if srv.builds != nil {
				srv.builds(t, root)
			}
			exit, err := c.Shutdown(ctxT(t, 60*time.Second))
			require.NoError(t, err)
			assert.Equal(t, lsp.EndedClean, exit.Ended, "%s", exit.Stderr.Tail)
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// gopls: Formatting's edits, applied as a WorkspaceEdit, leave the file gofmt-clean; the
// organize-imports action removes an unused import; completion and type definition answer.
func TestGoplsFormattingAndCodeActions(t *testing.T) {
	gopls := findGopls(t)
	e := newEnv(t)
	root := t.TempDir()
	writeFile(t, root, "go.mod", "module example.com/hello\n\ngo 1.26\n")
	const messy = "package main\nimport \"fmt\"\ntype T struct{ N int }\nfunc main() {\nvar t T\n  fmt.Println( t.N )\n}\n"
	path := writeFile(t, root, "main.go", messy)
	cfg := lsp.WithPreset(lsp.Config{Path: gopls, Root: root, Env: []string{"GOPROXY=off", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod"},
		Grace: 20 * time.Second, ShutdownTimeout: 30 * time.Second})
	c, err := lsp.Start(ctxT(t, 60*time.Second), e.svc, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	uri, err := openFile(ctxT(t, 10*time.Second), c, "main.go")
	require.NoError(t, err)
	require.NoError(t, c.WaitReady(ctxT(t, 60*time.Second), uri))

	edits, err := c.Formatting(ctxT(t, 30*time.Second), uri, lsp.FormattingOptions{TabSize: 8})
	require.NoError(t, err)
	require.NotEmpty(t, edits)
	_, err = c.ApplyEdit(ctxT(t, 30*time.Second), lsp.WorkspaceEdit{Changes: map[string][]lsp.TextEdit{uri: edits}})
	require.NoError(t, err)
	formatted, err := os.ReadFile(path)
	require.NoError(t, err)
	gofmt := exec.Command("gofmt", "-l", path)
	out, err := gofmt.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Empty(t, string(out), "gofmt has nothing left to do:\n%s", formatted)

	text := string(formatted)
	at, err := lsp.OffsetToPosition(formatted, strings.Index(text, "t.N")+2, c.PositionEncoding())
	require.NoError(t, err)
	list, err := c.Completion(ctxT(t, 30*time.Second), uri, at)
	require.NoError(t, err)
	assert.True(t, slices.ContainsFunc(list.Items, func(it lsp.CompletionItem) bool { return it.Label == "N" }), "%+v", list.Items)
	varAt, err := lsp.OffsetToPosition(formatted, strings.Index(text, "var t")+4, c.PositionEncoding())
	require.NoError(t, err)
	types, err := c.TypeDefinition(ctxT(t, 30*time.Second), uri, varAt)
	require.NoError(t, err)
	require.Len(t, types, 1)
	assert.Equal(t, strings.Count(text[:strings.Index(text, "type T")], "\n"), types[0].Range.Start.Line, "where type T is")

	// An unused import: organizing the imports removes it.
	_, err = c.Change(ctxT(t, 10*time.Second), uri, lsp.TextChange{Text: strings.Replace(text, "import \"fmt\"", "import (\n\t\"fmt\"\n\t\"os\"\n)", 1)})
	require.NoError(t, err)
	doc, _ := c.Document(uri)
	set, err := c.Diagnostics(ctxT(t, 60*time.Second), uri, doc.Version)
	require.NoError(t, err)
	require.NotEmpty(t, set.Diagnostics, "%+v", set)
	actions, err := c.CodeActions(ctxT(t, 30*time.Second), uri, set.Diagnostics[0].Range, set.Diagnostics, "source.organizeImports")
	require.NoError(t, err)
	i := slices.IndexFunc(actions, func(a lsp.CodeAction) bool { return a.Kind == "source.organizeImports" && a.Edit != nil })
	require.GreaterOrEqual(t, i, 0, "organize imports, with its edit: %+v", actions)
	_, err = c.ApplyEdit(ctxT(t, 30*time.Second), *actions[i].Edit)
	require.NoError(t, err)
	fixed, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.NotContains(t, string(fixed), `"os"`, "%s", fixed)
}
