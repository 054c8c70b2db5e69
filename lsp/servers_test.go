package lsp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/lsp"
)

// findServer locates a real language server for the tests: $envVar, else what `make tools`
// installs (under <repo>/.bin), else the program on PATH. When none is found, the test skips
// if the install step recorded that it failed (.bin/lsp-install/<install>.failed, whose reason
// the skip quotes) and fails otherwise: a server that should be there is never skipped
// silently. With -short a missing server is skipped too.
func findServer(t *testing.T, envVar, install string, candidates ...string) string {
	t.Helper()
	if p := os.Getenv(envVar); p != "" {
		return p
	}
	root := repoRoot()
	for _, c := range candidates {
		if filepath.IsAbs(c) || strings.Contains(c, "/") {
			p := c
			if !filepath.IsAbs(c) && root != "" {
				p = filepath.Join(root, c)
			}
			if _, err := os.Stat(p); err == nil {
				return p
			}
			continue
		}
		if p, err := exec.LookPath(c); err == nil {
			return p
		}
	}
	if root != "" {
		if b, err := os.ReadFile(filepath.Join(root, ".bin", "lsp-install", install+".failed")); err == nil {
			t.Skipf("%s is not installed: its install step failed (`make tools`; %s):\n%s", candidates[0], filepath.Join(".bin", "lsp-install", install+".failed"), b)
		}
	}
	if testing.Short() {
		t.Skipf("%s not found (-short): run `make tools`", candidates[0])
	}
	t.Fatalf("%s not found: run `make tools` (it installs the test servers under .bin) or set %s", candidates[0], envVar)
	return ""
}

func findGopls(t *testing.T) string {
	return findServer(t, "SUBKIT_GOPLS", "gopls", ".bin/gopls", "gopls")
}

// repoRoot is the nearest directory above the working directory whose go.mod declares the
// subkit module, or "".
func repoRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if f, err := os.Open(filepath.Join(dir, "go.mod")); err == nil {
			s := bufio.NewScanner(f)
			s.Scan()
			f.Close()
			if strings.TrimSpace(s.Text()) == "module github.com/subkit/subkit" {
				return dir
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// realServer is one of the four servers the document-sync test runs against, with a file
// that has one error (after multi-byte and astral characters on its line, so columns depend
// on the position encoding), the edit that fixes it, and a hover.
type realServer struct {
	name      string
	find      func(t *testing.T) lsp.Config
	file      string // relative to the root
	setup     map[string]string
	bad       string
	anchor    string // the diagnostic's range starts where this appears in bad
	message   string // in the diagnostic's message
	fixFrom   string // the fix replaces this (first occurrence) in bad...
	fixTo     string // ...with this
	hoverAt   string // hover at the first occurrence of this in the fixed text...
	hoverWant string // ...shows this
	wantEnc   lsp.PositionEncoding
}

var realServers = []realServer{
	{
		name: "gopls",
		find: func(t *testing.T) lsp.Config {
			return lsp.Config{Path: findGopls(t), Env: []string{"GOPROXY=off", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod"},
				Settings: map[string]any{"gopls": map[string]any{"staticcheck": false}}}
		},
		file:  "main.go",
		setup: map[string]string{"go.mod": "module example.com/hello\n\ngo 1.26\n"},
		bad: "package main\n\n// Greet returns a greeting.\nfunc Greet(name string) string { return \"hello \" + name }\n\n" +
			"func main() {\n\t_ = \"ü😀\"; var n int = \"oops\"; _ = n\n\tprintln(Greet(\"x\"))\n}\n",
		anchor: `"oops"`, message: `cannot use "oops"`, fixFrom: `"oops"`, fixTo: "1",
		hoverAt: "Greet(\"x\")", hoverWant: "func Greet(name string) string", wantEnc: lsp.UTF16,
	},
	{
		name: "pyright",
		find: func(t *testing.T) lsp.Config {
			return lsp.Config{Path: findServer(t, "SUBKIT_PYRIGHT", "npm", ".bin/npm/node_modules/.bin/pyright-langserver", "pyright-langserver"),
				Args: []string{"--stdio"}}
		},
		file:   "main.py",
		bad:    "def greet(name: str) -> str:\n    return \"hello \" + name\n\n\ns = \"ü😀\"; x: int = \"oops\"\nprint(greet(s), x)\n",
		anchor: `"oops"`, message: `is not assignable to declared type "int"`, fixFrom: `"oops"`, fixTo: "1",
		hoverAt: "greet(s)", hoverWant: "def greet(name: str) -> str", wantEnc: lsp.UTF16,
	},
	{
		name: "typescript-language-server",
		find: func(t *testing.T) lsp.Config {
			p := findServer(t, "SUBKIT_TSLS", "npm", ".bin/npm/node_modules/.bin/typescript-language-server", "typescript-language-server")
			cfg := lsp.Config{Path: p, Args: []string{"--stdio"}, UnversionedSettle: time.Second}
			// The typescript next to the server (.bin/npm), not one found elsewhere.
			if lib := filepath.Join(filepath.Dir(filepath.Dir(p)), "typescript", "lib"); fileExists(lib) {
				cfg.InitializationOptions = map[string]any{"tsserver": map[string]any{"path": lib}}
			}
			return cfg
		},
		file: "main.ts",
		bad: "export function greet(name: string): string { return \"hello \" + name; }\n" +
			"export const s = \"ü😀\"; export const x: number = \"oops\";\n",
		anchor: `x: number`, message: `Type 'string' is not assignable to type 'number'`, fixFrom: `"oops"`, fixTo: "1",
		hoverAt: "greet(name", hoverWant: "function greet(name: string): string", wantEnc: lsp.UTF16,
	},
	{
		name: "clangd",
		find: func(t *testing.T) lsp.Config {
			return lsp.Config{Path: findServer(t, "SUBKIT_CLANGD", "clangd", "clangd")}
		},
		file:   "main.c",
		bad:    "int greet(int n) { return n + 1; }\n\nint main(void) { const char *s = \"ü😀\"; (void)s; return y; }\n",
		anchor: "y; }", message: "undeclared identifier 'y'", fixFrom: "y; }", fixTo: "greet(0); }",
		hoverAt: "greet(0)", hoverWant: "greet", wantEnc: lsp.UTF8,
	},
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestRealServers runs the document cycle against each real server: open a file with an
// error and get its diagnostic (for version 1, at the column the negotiated encoding gives),
// fix it with an incremental edit and get the empty set for version 2 (never the stale one),
// hover, close, shut down cleanly, nothing left running.
func TestRealServers(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the test servers are installed on Linux and macOS")
	}
	for _, srv := range realServers {
		t.Run(srv.name, func(t *testing.T) {
			cfg := srv.find(t)
			// A loaded CI machine can slow a real server's exit past the default grace: the
			// test is of a clean shutdown, not of its speed.
			cfg.Grace, cfg.ShutdownTimeout = 20*time.Second, 30*time.Second
			e := newEnv(t)
			root := t.TempDir()
			for name, text := range srv.setup {
				writeFile(t, root, name, text)
			}
			path := writeFile(t, root, srv.file, srv.bad)
			cfg.Root = root
			cfg.PositionEncodings = []lsp.PositionEncoding{lsp.UTF8, lsp.UTF16}
			begin := time.Now()
			c, err := lsp.Start(ctxT(t, 60*time.Second), e.svc, cfg)
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			started := time.Since(begin)
			enc := c.PositionEncoding()
			assert.Equal(t, srv.wantEnc, enc)
			assert.Equal(t, lsp.SyncIncremental, c.SyncKind())

			uri := lsp.FileURI(path)
			v1, err := c.Open(ctxT(t, 10*time.Second), uri, lsp.LanguageID(path), srv.bad)
			require.NoError(t, err)
			assert.Equal(t, 1, v1)
			set, err := c.Diagnostics(ctxT(t, 60*time.Second), uri, v1)
			require.NoError(t, err)
			diagnosed := time.Since(begin)
			require.Len(t, set.Diagnostics, 1, "%+v", set)
			assert.GreaterOrEqual(t, set.Version, 1)
			d := set.Diagnostics[0]
			assert.Equal(t, lsp.SeverityError, d.Severity)
			assert.Contains(t, d.Message, srv.message)
			want, err := lsp.OffsetToPosition([]byte(srv.bad), strings.Index(srv.bad, srv.anchor), enc)
			require.NoError(t, err)
			assert.Equal(t, want, d.Range.Start, "the diagnostic's start, in %s", enc)

			// The fix, as one incremental edit whose range counts in the negotiated encoding.
			from := strings.Index(srv.bad, srv.fixFrom)
			start, err := lsp.OffsetToPosition([]byte(srv.bad), from, enc)
			require.NoError(t, err)
			end, err := lsp.OffsetToPosition([]byte(srv.bad), from+len(srv.fixFrom), enc)
			require.NoError(t, err)
			v2, err := c.Change(ctxT(t, 10*time.Second), uri, lsp.TextChange{Range: &lsp.Range{Start: start, End: end}, Text: srv.fixTo})
			require.NoError(t, err)
			assert.Equal(t, 2, v2)
			fixed := strings.Replace(srv.bad, srv.fixFrom, srv.fixTo, 1)
			doc, ok := c.Document(uri)
			require.True(t, ok)
			assert.Equal(t, fixed, doc.Text)
			set, err = c.Diagnostics(ctxT(t, 60*time.Second), uri, v2)
			require.NoError(t, err)
			fresh := time.Since(begin)
			assert.GreaterOrEqual(t, set.Version, 2, "never the set of version 1")
			assert.Empty(t, set.Diagnostics, "%+v", set)

			at, err := lsp.OffsetToPosition([]byte(fixed), strings.Index(fixed, srv.hoverAt)+1, enc)
			require.NoError(t, err)
			h, err := c.Hover(ctxT(t, 30*time.Second), uri, at)
			require.NoError(t, err)
			require.NotNil(t, h)
			assert.Contains(t, h.Text(), srv.hoverWant)

			require.NoError(t, c.CloseDocument(ctxT(t, 10*time.Second), uri))
			_, ok = c.Document(uri)
			assert.False(t, ok)

			shutBegin := time.Now()
			exit, err := c.Shutdown(ctxT(t, 30*time.Second))
			require.NoError(t, err)
			assert.Equal(t, lsp.EndedClean, exit.Ended, "stderr: %s", exit.Stderr.Tail)
			assert.Equal(t, 0, exit.ExitCode)
			assert.NoError(t, exit.ShutdownErr)
			assert.Empty(t, testutil.Marked(e.mark), "a %s process is left", srv.name)
			t.Logf("%s: %s sync, %s positions, pull=%v; started in %v, diagnostic after %v, fresh set after %v, shutdown in %v (%d escaped)",
				srv.name, c.SyncKind(), enc, c.PullDiagnostics(), started, diagnosed, fresh, time.Since(shutBegin), exit.Escaped)
		})
	}
}

// gopls asks the client things on its own (registrations, progress) and reports its version.
func TestGoplsRequestsAndVersion(t *testing.T) {
	gopls := findGopls(t)
	e := newEnv(t)
	root := t.TempDir()
	writeFile(t, root, "go.mod", "module example.com/hello\n\ngo 1.26\n")
	var mu sync.Mutex
	requests := map[string]int{}
	registered := make(chan struct{})
	count := func(method string) lsp.RequestHandler {
		return func(context.Context, json.RawMessage) (any, error) {
			mu.Lock()
			if requests[method]++; requests[method] == 1 {
				close(registered)
			}
			mu.Unlock()
			return nil, nil
		}
	}
	c, err := lsp.Start(ctxT(t, 60*time.Second), e.svc, lsp.Config{
		Path: gopls, Root: root, Env: []string{"GOPROXY=off", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod"},
		Handlers: map[string]lsp.RequestHandler{"client/registerCapability": count("client/registerCapability")},
	})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	info := c.InitializeResult().ServerInfo
	require.NotNil(t, info)
	assert.Equal(t, "gopls", info.Name)
	assert.Contains(t, info.Version, "v0.23.0", "the pinned gopls")
	var caps struct {
		HoverProvider bool `json:"hoverProvider"`
	}
	require.NoError(t, json.Unmarshal(c.InitializeResult().Capabilities, &caps))
	assert.True(t, caps.HoverProvider)
	// gopls registers didChangeConfiguration once initialized (on a busy machine, or under Wine,
	// well after the first document); Shutdown waits for nothing.
	_, err = c.Open(ctxT(t, 10*time.Second), lsp.FileURI(filepath.Join(root, "a.go")), "go", "package a\n")
	require.NoError(t, err)
	select {
	case <-registered:
	case <-ctxT(t, 60*time.Second).Done():
		t.Fatal("gopls never registered a capability (client/registerCapability)")
	}
	exit, err := c.Shutdown(ctxT(t, 30*time.Second))
	require.NoError(t, err)
	assert.Equal(t, lsp.EndedClean, exit.Ended)
	assert.Empty(t, testutil.Marked(e.mark))
}

// gopls and a dependency edited on disk: the file the client has open (main.go) gets the
// diagnostics of the new lib.go, through the watcher (Config.WatchFiles and SyncFiles) and
// through FilesChanged.
func TestGoplsFollowsTheDisk(t *testing.T) {
	gopls := findGopls(t)
	for _, watch := range []bool{true, false} {
		t.Run(map[bool]string{true: "watcher", false: "FilesChanged"}[watch], func(t *testing.T) {
			e := newEnv(t)
			root := t.TempDir()
			writeFile(t, root, "go.mod", "module example.com/hello\n\ngo 1.26\n")
			lib := writeFile(t, root, "lib.go", "package main\n\nfunc Foo() int { return 1 }\n")
			writeFile(t, root, "main.go", "package main\n\nfunc main() { println(Foo()) }\n")
			// FileEventSettle: every step here changes main.go's diagnostics, so gopls always
			// republishes; a long settle keeps a loaded machine from taking the held set first.
			c, err := lsp.Start(ctxT(t, 60*time.Second), e.svc, lsp.WithPreset(lsp.Config{
				Path: gopls, Root: root, WatchFiles: watch, Grace: 20 * time.Second, ShutdownTimeout: 30 * time.Second,
				Env: []string{"GOPROXY=off", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod"}, FileEventSettle: 30 * time.Second,
			}))
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			uri, err := openFile(ctxT(t, 10*time.Second), c, "main.go")
			require.NoError(t, err)
			set, err := c.Diagnostics(ctxT(t, 60*time.Second), uri, 1)
			require.NoError(t, err)
			assert.Empty(t, set.Diagnostics, "%+v", set)

			tell := func() {
				if watch {
					require.NoError(t, c.SyncFiles(ctxT(t, 30*time.Second)))
				} else {
					require.NoError(t, c.FilesChanged(ctxT(t, 10*time.Second), lsp.FileEvent{URI: lsp.FileURI(lib), Type: lsp.FileChanged}))
				}
			}
			require.NoError(t, os.WriteFile(lib, []byte("package main\n\nfunc Bar() int { return 1 }\n"), 0o644))
			tell()
			set, err = c.Diagnostics(ctxT(t, 60*time.Second), uri, 1)
			require.NoError(t, err)
			require.Len(t, set.Diagnostics, 1, "%+v", set)
			assert.Contains(t, set.Diagnostics[0].Message, "undefined: Foo")

			require.NoError(t, os.WriteFile(lib, []byte("package main\n\nfunc Foo() int { return 2 }\n"), 0o644))
			tell()
			set, err = c.Diagnostics(ctxT(t, 60*time.Second), uri, 1)
			require.NoError(t, err)
			assert.Empty(t, set.Diagnostics, "%+v", set)
			exit, err := c.Shutdown(ctxT(t, 60*time.Second))
			require.NoError(t, err)
			assert.Equal(t, lsp.EndedClean, exit.Ended)
		})
	}
}

// Clean, broken, clean again at once: clangd and tsserver publish nothing for the last text
// (they checked it already), and the client answers it at once from the first answer.
func TestRevertRealServers(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the test servers are installed on Linux and macOS")
	}
	for _, srv := range []realServer{realServers[2], realServers[3]} {
		t.Run(srv.name, func(t *testing.T) {
			cfg := srv.find(t)
			cfg.Grace, cfg.ShutdownTimeout = 20*time.Second, 30*time.Second
			e := newEnv(t)
			root := t.TempDir()
			fixed := strings.Replace(srv.bad, srv.fixFrom, srv.fixTo, 1)
			path := writeFile(t, root, srv.file, fixed)
			cfg.Root = root
			c, err := lsp.Start(ctxT(t, 60*time.Second), e.svc, cfg)
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			uri := lsp.FileURI(path)
			v1, err := c.Open(ctxT(t, 10*time.Second), uri, lsp.LanguageID(path), fixed)
			require.NoError(t, err)
			set, err := c.Diagnostics(ctxT(t, 90*time.Second), uri, v1)
			require.NoError(t, err)
			require.Empty(t, set.Diagnostics, "%+v", set)
			_, err = c.Change(ctxT(t, 10*time.Second), uri, lsp.TextChange{Text: srv.bad})
			require.NoError(t, err)
			v3, err := c.Change(ctxT(t, 10*time.Second), uri, lsp.TextChange{Text: fixed})
			require.NoError(t, err)
			set, err = c.Diagnostics(ctxT(t, 60*time.Second), uri, v3)
			require.NoError(t, err)
			assert.Empty(t, set.Diagnostics, "%+v", set)
			assert.GreaterOrEqual(t, set.Version, v3)
			t.Logf("%s: the reverted text answered (reused %v)", srv.name, set.Reused)
			exit, err := c.Shutdown(ctxT(t, 60*time.Second))
			require.NoError(t, err)
			assert.Equal(t, lsp.EndedClean, exit.Ended)
		})
	}
}
