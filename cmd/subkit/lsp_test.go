//go:build unix

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
)

// lspCLI runs `subkit lsp` in-process with a marked environment and a private temp dir; the
// leak check finds any server process left behind.
func lspCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	mark, _ := leakChecked(t)
	var out, errb bytes.Buffer
	require.Equal(t, "lsp", args[0], "args start with the command, as on the command line")
	code = cmdLsp(context.Background(), args[1:], &out, &errb)
	assert.Empty(t, testutil.Marked(mark), "a server process outlived subkit lsp")
	return code, out.String(), errb.String()
}

// lspFake builds the lsp package's fake server into the test's temp dir.
func lspFake(t *testing.T) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "fakeserver")
	b, err := exec.Command("go", "build", "-o", out, "../../lsp/testdata/fakeserver").CombinedOutput()
	require.NoError(t, err, "building the fake server: %s", b)
	return out
}

func lspDecode(t *testing.T, s string) lspOutput {
	t.Helper()
	var v lspOutput
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&v), "output: %s", s)
	assert.False(t, dec.More(), "exactly one JSON object")
	return v
}

func TestLspFakeJSON(t *testing.T) {
	fake := lspFake(t)
	root := t.TempDir()
	notes := filepath.Join(root, "notes.txt")
	require.NoError(t, os.WriteFile(notes, []byte("fine\nan ERROR here\n"), 0o644))
	code, out, errOut := lspCLI(t, "lsp", "--json", "--root", root, "--open", notes, "--hover", notes+":2:5", "--wait", "5s", "--", fake)
	require.Equal(t, 0, code, "stderr: %s", errOut)
	o := lspDecode(t, out)
	require.NotNil(t, o.ServerInfo)
	assert.Equal(t, "fakeserver", o.ServerInfo.Name)
	assert.Contains(t, string(o.Capabilities), `"hoverProvider":true`)
	require.Len(t, o.Diagnostics, 1)
	assert.Equal(t, "file://"+notes, o.Diagnostics[0].URI)
	assert.Equal(t, "found ERROR", o.Diagnostics[0].Message)
	require.NotNil(t, o.Hover)
	assert.Equal(t, "`ERROR` at 1:4", o.Hover.Text())
	assert.Equal(t, "clean", o.Shutdown, "stdout: %s", out)
	assert.Contains(t, o.StderrTail, "fakeserver: bye")
	assert.Nil(t, o.Error)
	// The raw shape the issue asks for.
	for _, key := range []string{`"server_info":`, `"capabilities":`, `"diagnostics":[`, `"hover":{`, `"shutdown":"clean"`, `"stderr_tail":`} {
		assert.Contains(t, out, key)
	}
	assert.NotContains(t, out, `"error"`)
}

func TestLspFakeText(t *testing.T) {
	fake := lspFake(t)
	root := t.TempDir()
	notes := filepath.Join(root, "notes.txt")
	require.NoError(t, os.WriteFile(notes, []byte("ünï ERROR\n"), 0o644))
	code, out, errOut := lspCLI(t, "lsp", "--root", root, "--hover", notes+":1:8", "--", fake)
	require.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Contains(t, out, "server: fakeserver 1.0\n")
	assert.Contains(t, out, notes+":1:7: error: found ERROR [fake]\n", "byte columns, as compilers print them")
	assert.Contains(t, out, "hover:\n`ERROR` at 0:5\n", "byte column 8 is the R after the E")
	assert.Contains(t, out, "shutdown: clean\n")
	assert.Empty(t, errOut)
}

func TestLspServerFails(t *testing.T) {
	fake := lspFake(t)
	t.Run("crash on initialize", func(t *testing.T) {
		code, out, _ := lspCLI(t, "lsp", "--json", "--root", t.TempDir(), "--", fake, "-mode=crash-on-init")
		assert.Equal(t, exitFailure, code)
		o := lspDecode(t, out)
		require.NotNil(t, o.Error)
		assert.Equal(t, "server_exited", o.Error.Kind)
		assert.Contains(t, o.Error.Message, "exited with code 2")
		assert.Equal(t, "crashed", o.Shutdown)
		assert.Contains(t, o.StderrTail, "fatal: cannot start")
		assert.Equal(t, []lspDiagnostic{}, o.Diagnostics)
	})
	t.Run("crash on initialize, text", func(t *testing.T) {
		code, _, errOut := lspCLI(t, "lsp", "--root", t.TempDir(), "--", fake, "-mode=crash-on-init")
		assert.Equal(t, exitFailure, code)
		assert.Contains(t, errOut, "exited with code 2")
		assert.Contains(t, errOut, "[subkit: the server's stderr ends with]\n")
	})
	t.Run("not a language server", func(t *testing.T) {
		code, out, _ := lspCLI(t, "lsp", "--json", "--grace", "200ms", "--", "bash", "-c", "echo hello; sleep 60")
		assert.Equal(t, exitFailure, code)
		o := lspDecode(t, out)
		require.NotNil(t, o.Error)
		assert.Equal(t, "protocol", o.Error.Kind)
		assert.Equal(t, "terminated", o.Shutdown)
	})
	t.Run("missing file", func(t *testing.T) {
		code, out, _ := lspCLI(t, "lsp", "--json", "--root", t.TempDir(), "--open", "/no/such/file.go", "--", fake)
		assert.Equal(t, exitFailure, code)
		o := lspDecode(t, out)
		require.NotNil(t, o.Error)
		assert.Contains(t, o.Error.Message, "open /no/such/file.go")
		assert.Equal(t, "clean", o.Shutdown, "the server is still shut down properly")
	})
}

func TestLspUsage(t *testing.T) {
	for _, args := range [][]string{
		{"lsp"},
		{"lsp", "--hover", "x.go:1", "--", "srv"},
		{"lsp", "--hover", "x.go:0:1", "--", "srv"},
		{"lsp", "--settings", "[1]", "--", "srv"},
		{"lsp", "--grace", "0s", "--", "srv"},
		{"lsp", "--shutdown-timeout", "0s", "--", "srv"},
		{"lsp", "--settle", "0s", "--", "srv"},
		{"lsp", "--edit", "x.go", "--", "srv"},
		{"lsp", "--edit", "=y", "--", "srv"},
		{"lsp", "--nope"},
	} {
		code, _, errOut := lspCLI(t, args...)
		assert.Equal(t, exitUsage, code, "%v", args)
		assert.Contains(t, errOut, `run "subkit lsp -h" for usage`, "%v", args)
		assert.NotContains(t, errOut, "Go value", "%v: the flag, not the decoder", args)
	}
	for _, settings := range []string{"[1]", "null", `"x"`} {
		_, _, errOut := lspCLI(t, "lsp", "--settings", settings, "--", "srv")
		assert.Contains(t, errOut, "--settings: want a JSON object, not ", settings)
	}
	code, out, _ := lspCLI(t, "lsp", "--json", "--", "no-such-language-server-xyz")
	assert.Equal(t, exitNotFound, code)
	assert.Contains(t, out, `"kind":"not_found"`)
	code, out, _ = lspCLI(t, "lsp", "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "usage: subkit lsp")
	assert.Contains(t, out, "-hover")
}

func TestParseHoverAt(t *testing.T) {
	h, err := parseHoverAt("C:/x/y.go:3:14")
	require.NoError(t, err)
	assert.Equal(t, lspHoverAt{file: "C:/x/y.go", line: 3, col: 14}, h)
	for _, bad := range []string{"y.go", "y.go:3", ":3:4", "y.go:a:1", "y.go:1:-1"} {
		_, err := parseHoverAt(bad)
		assert.Error(t, err, bad)
	}
}

// findGoplsForCLI locates gopls as the lsp package's tests do: $SUBKIT_GOPLS, <repo>/.bin/gopls
// (`make tools`), PATH; missing, the test fails unless -short.
func findGoplsForCLI(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SUBKIT_GOPLS"); p != "" {
		return p
	}
	for dir, _ := os.Getwd(); ; dir = filepath.Dir(dir) {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			s := bufio.NewScanner(f)
			s.Scan()
			f.Close()
			if strings.TrimSpace(s.Text()) == "module github.com/subkit/subkit" {
				if p := filepath.Join(dir, ".bin", "gopls"); fileExists(p) {
					return p
				}
				break
			}
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	if p, err := exec.LookPath("gopls"); err == nil {
		return p
	}
	if testing.Short() {
		t.Skip("gopls not found (-short): run `make tools`")
	}
	t.Fatal("gopls not found: run `make tools` (builds ./.bin/gopls from tools/gopls) or set SUBKIT_GOPLS")
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func TestLspGopls(t *testing.T) {
	gopls := findGoplsForCLI(t)
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOTOOLCHAIN", "local")
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte("module example.com/hello\n\ngo 1.26\n"), 0o644))
	main := filepath.Join(root, "main.go")
	require.NoError(t, os.WriteFile(main, []byte(`package main

// Greet returns a greeting.
func Greet(name string) string { return "hello " + name }

func main() {
	var n int = "oops"
	_ = n
	println(Greet("x"))
}
`), 0o644))
	// Generous shutdown bounds: a loaded machine can slow gopls's exit past the default grace,
	// and the test is of a clean shutdown, not of its speed.
	slow := []string{"--grace", "20s", "--shutdown-timeout", "30s"}
	code, out, errOut := lspCLI(t, append(append([]string{"lsp", "--json", "--root", root, "--open", main, "--hover", main + ":9:11", "--wait", "60s"}, slow...), "--", gopls)...)
	require.Equal(t, 0, code, "stderr: %s\nstdout: %s", errOut, out)
	o := lspDecode(t, out)
	require.NotNil(t, o.ServerInfo)
	assert.Equal(t, "gopls", o.ServerInfo.Name)
	require.NotEmpty(t, o.Diagnostics, "stdout: %s", out)
	assert.Contains(t, o.Diagnostics[0].Message, `cannot use "oops"`)
	assert.Equal(t, "file://"+main, o.Diagnostics[0].URI)
	require.NotNil(t, o.Hover)
	assert.Contains(t, o.Hover.Text(), "Greet returns a greeting.")
	assert.Equal(t, "clean", o.Shutdown, "stdout: %s", out)

	code, text, errOut := lspCLI(t, append(append([]string{"lsp", "--root", root, "--open", main}, slow...), "--", gopls)...)
	require.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Contains(t, text, "server: gopls v0.23.0\n")
	assert.Contains(t, text, main+`:7:14: error: cannot use "oops"`)
	assert.Contains(t, text, "shutdown: clean\n")
}

// --open F --edit F=NEW: the diagnostics after the open and after the edit, each with its
// version; the edit's set is never the open's.
func TestLspEdit(t *testing.T) {
	fake := lspFake(t)
	root := t.TempDir()
	notes := filepath.Join(root, "notes.txt")
	require.NoError(t, os.WriteFile(notes, []byte("an ERROR and ERROR\n"), 0o644))
	fixed := filepath.Join(t.TempDir(), "fixed.txt")
	require.NoError(t, os.WriteFile(fixed, []byte("all good, one ERROR\n"), 0o644))
	code, out, errOut := lspCLI(t, "lsp", "--json", "--root", root, "--open", notes, "--edit", notes+"="+fixed,
		"--settle", "100ms", "--", fake, "-sync=2", "-stale")
	require.Equal(t, 0, code, "stderr: %s", errOut)
	o := lspDecode(t, out)
	require.Len(t, o.DiagnosticSets, 2, "stdout: %s", out)
	open, edit := o.DiagnosticSets[0], o.DiagnosticSets[1]
	assert.Equal(t, "open", open.After)
	assert.Equal(t, 1, open.Version)
	assert.Len(t, open.Diagnostics, 2)
	assert.Equal(t, "edit", edit.After)
	assert.Equal(t, 2, edit.Version)
	assert.True(t, edit.Versioned)
	require.Len(t, edit.Diagnostics, 1, "the fresh set, not the stale one the server sent first")
	assert.Equal(t, 14, edit.Diagnostics[0].Range.Start.Character)
	assert.Len(t, o.Diagnostics, 1, "the last set")
	assert.Equal(t, "utf-16", o.PositionEncoding)
	assert.Equal(t, "clean", o.Shutdown)
	require.NotNil(t, o.Stderr)
	assert.Positive(t, o.Stderr.TotalBytes)
	assert.False(t, o.Stderr.Truncated)
	assert.Empty(t, o.ShutdownError)
	for _, key := range []string{`"diagnostic_sets":[{"after":"open","uri":`, `"version":2`, `"total_bytes":`, `"truncated":false`} {
		assert.Contains(t, out, key)
	}

	code, text, errOut := lspCLI(t, "lsp", "--root", root, "--open", notes, "--edit", notes+"="+fixed, "--settle", "100ms", "--", fake)
	require.Equal(t, 0, code, "stderr: %s", errOut)
	assert.Contains(t, text, notes+": version 1 (after open): 2 diagnostic(s)\n"+notes+":1:4: error: found ERROR [fake]\n")
	assert.Contains(t, text, notes+": version 2 (after edit): 1 diagnostic(s)\n"+notes+":1:15: error: found ERROR [fake]\n")

	// An edit of a file no --open named opens it first; a missing new text fails the step.
	code, out, _ = lspCLI(t, "lsp", "--json", "--root", root, "--edit", notes+"="+fixed, "--settle", "100ms", "--", fake)
	require.Equal(t, 0, code)
	o = lspDecode(t, out)
	require.Len(t, o.DiagnosticSets, 1)
	assert.Equal(t, 2, o.DiagnosticSets[0].Version)
	code, out, _ = lspCLI(t, "lsp", "--json", "--root", root, "--edit", notes+"=/no/such/file", "--", fake)
	assert.Equal(t, exitFailure, code)
	o = lspDecode(t, out)
	require.NotNil(t, o.Error)
	assert.Contains(t, o.Error.Message, "/no/such/file")
}

// A server that had to be killed at shutdown: a non-zero status, the shutdown error and the
// stderr counts in the JSON.
func TestLspKilledAtShutdown(t *testing.T) {
	fake := lspFake(t)
	code, out, errOut := lspCLI(t, "lsp", "--json", "--root", t.TempDir(), "--shutdown-timeout", "200ms", "--grace", "200ms",
		"--", fake, "-mode=ignore-term", "-flood=100000")
	assert.Equal(t, exitFailure, code, "stderr: %s", errOut)
	o := lspDecode(t, out)
	assert.Equal(t, "killed", o.Shutdown)
	assert.Contains(t, o.ShutdownError, "context deadline exceeded")
	require.NotNil(t, o.Error)
	assert.Equal(t, "shutdown", o.Error.Kind)
	assert.Contains(t, o.Error.Message, "it was killed")
	require.NotNil(t, o.Stderr)
	assert.GreaterOrEqual(t, o.Stderr.TotalBytes, int64(100000))
	assert.True(t, o.Stderr.Truncated, "100000 bytes of stderr, a 64000-byte tail")
	assert.Len(t, o.StderrTail, 64000)

	code, _, errOut = lspCLI(t, "lsp", "--root", t.TempDir(), "--shutdown-timeout", "200ms", "--grace", "200ms", "--", fake, "-mode=ignore-shutdown")
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, "it was terminated")
}

// A diagnostics wait that runs out is an error with its own kind and exit status, never an
// empty list that reads as a clean file.
func TestLspWaitRanOut(t *testing.T) {
	fake := lspFake(t)
	root := t.TempDir()
	notes := filepath.Join(root, "notes.txt")
	require.NoError(t, os.WriteFile(notes, []byte("an ERROR\n"), 0o644))
	code, out, errOut := lspCLI(t, "lsp", "--json", "--root", root, "--open", notes, "--wait", "300ms", "--", fake, "-silent")
	assert.Equal(t, exitTimeout, code, "stderr: %s", errOut)
	o := lspDecode(t, out)
	require.NotNil(t, o.Error, "stdout: %s", out)
	assert.Equal(t, "diagnostics_timeout", o.Error.Kind)
	assert.Contains(t, o.Error.Message, notes+" (version 1) within --wait 300ms")
	assert.Empty(t, o.DiagnosticSets)
	assert.Equal(t, "clean", o.Shutdown, "the server is still shut down properly")

	code, _, errOut = lspCLI(t, "lsp", "--root", root, "--open", notes, "--wait", "300ms", "--", fake, "-silent")
	assert.Equal(t, exitTimeout, code)
	assert.Contains(t, errOut, "no diagnostics for "+notes)
}

// A cold typescript-language-server (tsserver loads its whole library first) reports the type
// error within the default wait.
func TestLspColdTsserver(t *testing.T) {
	tsls := findRepoTool(t, "SUBKIT_TSLS", ".bin/npm/node_modules/.bin/typescript-language-server", "npm")
	root := t.TempDir()
	main := filepath.Join(root, "main.ts")
	require.NoError(t, os.WriteFile(main, []byte("export const x: number = \"oops\";\n"), 0o644))
	code, out, errOut := lspCLI(t, "lsp", "--root", root, "--open", main, "--grace", "20s", "--shutdown-timeout", "30s", "--", tsls, "--stdio")
	require.Equal(t, 0, code, "stderr: %s\nstdout: %s", errOut, out)
	assert.Contains(t, out, main+": version 1 (after open): 1 diagnostic(s)\n")
	assert.Contains(t, out, main+":1:14: error: Type 'string' is not assignable to type 'number'.")
	assert.Contains(t, out, "shutdown: clean\n")
}

// findRepoTool locates a test server: $envVar, else <repo>/rel (`make tools`); missing, the
// test skips when the install step recorded its failure (.bin/lsp-install/<install>.failed)
// or with -short, and fails otherwise.
func findRepoTool(t *testing.T, envVar, rel, install string) string {
	t.Helper()
	if p := os.Getenv(envVar); p != "" {
		return p
	}
	for dir, _ := os.Getwd(); ; dir = filepath.Dir(dir) {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			s := bufio.NewScanner(f)
			s.Scan()
			f.Close()
			if strings.TrimSpace(s.Text()) == "module github.com/subkit/subkit" {
				if p := filepath.Join(dir, rel); fileExists(p) {
					return p
				}
				if b, err := os.ReadFile(filepath.Join(dir, ".bin", "lsp-install", install+".failed")); err == nil {
					t.Skipf("%s is not installed: its install step failed:\n%s", rel, b)
				}
				break
			}
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	if testing.Short() {
		t.Skipf("%s not found (-short): run `make tools`", rel)
	}
	t.Fatalf("%s not found: run `make tools` or set %s", rel, envVar)
	return ""
}

// --definition, --references, --symbols and --rename on gopls across two files: byte
// columns, the line's text, and a rename written to disk after which the module builds.
func TestLspGoplsNavigation(t *testing.T) {
	gopls := findGoplsForCLI(t)
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOTOOLCHAIN", "local")
	root := t.TempDir()
	for name, text := range map[string]string{
		"go.mod":  "module example.com/hello\n\ngo 1.26\n",
		"lib.go":  "package main\n\n// Greet greets.\nfunc Greet(name string) string { return \"hi \" + name }\n",
		"main.go": "package main\n\nfunc main() {\n\tprintln(Greet(\"ü\"), Greet(\"y\"))\n}\n",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(root, name), []byte(text), 0o644))
	}
	main, lib := filepath.Join(root, "main.go"), filepath.Join(root, "lib.go")
	slow := []string{"--grace", "20s", "--shutdown-timeout", "30s"}
	code, out, errOut := lspCLI(t, append(append([]string{"lsp", "--json", "--root", root, "--definition", main + ":4:10",
		"--references", lib + "#Greet", "--symbols", lib}, slow...), "--", gopls)...)
	require.Equal(t, 0, code, "stderr: %s\nstdout: %s", errOut, out)
	o := lspDecode(t, out)
	def := locationOut{Path: "lib.go", Line: 4, Column: 6, EndLine: 4, EndColumn: 11, Text: `func Greet(name string) string { return "hi " + name }`}
	assert.Equal(t, []locationOut{def}, o.Definition)
	require.Len(t, o.References, 3)
	assert.Equal(t, def, o.References[0])
	assert.Equal(t, locationOut{Path: "main.go", Line: 4, Column: 23, EndLine: 4, EndColumn: 28, Text: `println(Greet("ü"), Greet("y"))`}, o.References[2],
		"byte columns after a two-byte character")
	require.Len(t, o.Symbols, 1)
	assert.Equal(t, "Greet", o.Symbols[0].Name)
	assert.Equal(t, "function", o.Symbols[0].Kind)
	assert.Equal(t, "clean", o.Shutdown)

	code, text, errOut := lspCLI(t, append(append([]string{"lsp", "--root", root, "--rename", main + "#Greet=Salute"}, slow...), "--", gopls)...)
	require.Equal(t, 0, code, "stderr: %s\nstdout: %s", errOut, text)
	assert.Contains(t, text, "renamed in lib.go\n")
	assert.Contains(t, text, "renamed in main.go\n")
	for _, f := range []string{main, lib} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		assert.Contains(t, string(b), "Salute(")
		assert.NotContains(t, string(b), "Greet(")
	}
	vet := exec.Command("go", "vet", "./...")
	vet.Dir = root
	b, err := vet.CombinedOutput()
	assert.NoError(t, err, "go vet after the rename: %s", b)

	code, _, errOut = lspCLI(t, "lsp", "--root", root, "--definition", main+"#Nope", "--", gopls)
	assert.Equal(t, exitFailure, code)
	assert.Contains(t, errOut, `symbol "Nope" does not appear`)
}
