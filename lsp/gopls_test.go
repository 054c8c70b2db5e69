package lsp_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/lsp"
)

// findGopls locates the gopls the tests run against: $SUBKIT_GOPLS, else <repo>/.bin/gopls
// (what `make tools` builds from tools/gopls, pinned to v0.23.0), else gopls on PATH. Without
// one the test fails, so CI cannot skip it silently; with -short it is skipped.
func findGopls(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SUBKIT_GOPLS"); p != "" {
		return p
	}
	if root := repoRoot(); root != "" {
		p := filepath.Join(root, ".bin", "gopls")
		if _, err := os.Stat(p); err == nil {
			return p
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

const goplsMain = `package main

// Greet returns a greeting.
func Greet(name string) string { return "hello " + name }

func main() {
	var n int = "oops"
	_ = n
	println(Greet("x"))
}
`

func TestGopls(t *testing.T) {
	gopls := findGopls(t)
	e := newEnv(t)
	root := t.TempDir()
	writeFile(t, root, "go.mod", "module example.com/hello\n\ngo 1.26\n")
	main := writeFile(t, root, "main.go", goplsMain)

	var mu sync.Mutex
	requests := map[string]int{}
	count := func(method string) lsp.RequestHandler {
		return func(context.Context, json.RawMessage) (any, error) {
			mu.Lock()
			requests[method]++
			mu.Unlock()
			return nil, nil
		}
	}
	begin := time.Now()
	c, err := lsp.Start(ctxT(t, 60*time.Second), e.svc, lsp.Config{
		Path: gopls, Root: root,
		// Offline and on the local toolchain: the module has no dependencies.
		Env:      []string{"GOPROXY=off", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod"},
		Settings: map[string]any{"gopls": map[string]any{"staticcheck": false}},
		Handlers: map[string]lsp.RequestHandler{
			"client/registerCapability":      count("client/registerCapability"),
			"window/workDoneProgress/create": count("window/workDoneProgress/create"),
		},
	})
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	started := time.Since(begin)
	info := c.InitializeResult().ServerInfo
	require.NotNil(t, info)
	assert.Equal(t, "gopls", info.Name)
	assert.Contains(t, info.Version, "v0.23.0", "the pinned gopls")
	var caps struct {
		HoverProvider bool `json:"hoverProvider"`
	}
	require.NoError(t, json.Unmarshal(c.InitializeResult().Capabilities, &caps))
	assert.True(t, caps.HoverProvider)

	uri, err := c.OpenFile(ctxT(t, 10*time.Second), main)
	require.NoError(t, err)
	diags, err := c.WaitDiagnostics(ctxT(t, 60*time.Second), uri, func(d []lsp.Diagnostic) bool { return len(d) > 0 })
	require.NoError(t, err)
	diagnosed := time.Since(begin)
	require.Len(t, diags, 1, "%+v", diags)
	assert.Equal(t, lsp.SeverityError, diags[0].Severity)
	assert.Contains(t, diags[0].Message, `cannot use "oops"`)
	assert.Equal(t, 6, diags[0].Range.Start.Line)

	pos, err := lsp.PositionFor([]byte(goplsMain), 9, 11) // Greet in println(Greet("x"))
	require.NoError(t, err)
	h, err := c.Hover(ctxT(t, 30*time.Second), uri, pos)
	require.NoError(t, err)
	require.NotNil(t, h)
	assert.Contains(t, h.Text(), "func Greet(name string) string")
	assert.Contains(t, h.Text(), "Greet returns a greeting.")

	shutBegin := time.Now()
	exit, err := c.Shutdown(ctxT(t, 30*time.Second))
	require.NoError(t, err)
	shut := time.Since(shutBegin)
	assert.Equal(t, lsp.EndedClean, exit.Ended, "stderr: %s", exit.Stderr.Tail)
	assert.Equal(t, 0, exit.ExitCode)
	assert.NoError(t, exit.ShutdownErr)
	assert.Empty(t, testutil.Marked(e.mark), "a gopls process is left")
	mu.Lock()
	assert.Positive(t, requests["client/registerCapability"], "gopls registers didChangeConfiguration")
	mu.Unlock()
	t.Logf("gopls: %d processes outside its group ended by Shutdown", exit.Escaped)
	t.Logf("gopls: started in %v, diagnostic after %v, shutdown in %v, total %v", started, diagnosed, shut, time.Since(begin))
}
