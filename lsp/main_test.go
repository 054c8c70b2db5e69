package lsp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/lsp"
	"github.com/subkit/subkit/subprocess"
)

// fakeServer is the path of testdata/fakeserver, built by TestMain into a temp dir.
var fakeServer string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "subkit-lsp-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fakeServer, err = buildFake(dir)
	if err != nil {
		os.RemoveAll(dir)
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// buildFake builds the fake server, or takes the one SUBKIT_LSP_FAKESERVER names: under Wine,
// which has no go, make test-windows cross-builds it beforehand.
func buildFake(dir string) (string, error) {
	if p := os.Getenv("SUBKIT_LSP_FAKESERVER"); p != "" {
		return p, nil
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	out := filepath.Join(dir, "fakeserver")
	if runtime.GOOS == "windows" {
		out += ".exe"
	}
	cmd := exec.Command(goTool, "build", "-o", out, "./testdata/fakeserver")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the fake server: %v\n%s", err, b)
	}
	return out, nil
}

// env is a test's Service with marked children and private temp and spill dirs, and the
// leak checks: no marked process, descriptor or runtime dir outlives the test.
type env struct {
	svc  *subprocess.Service
	mark string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	mark := testutil.Mark()
	testutil.NoLeaks(t, mark)
	tmp := t.TempDir()
	testutil.EmptyDir(t, tmp)
	svc, err := subprocess.New(subprocess.Config{Env: testutil.Env(mark), TempDir: tmp, SpillDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, svc.Close()) })
	return &env{svc: svc, mark: mark}
}

// start launches the fake server (Path and Root default to the fake and a temp dir, Grace to
// 500ms) and closes the client at cleanup.
func (e *env) start(t *testing.T, cfg lsp.Config, args ...string) *lsp.Client {
	t.Helper()
	c, err := e.try(t, cfg, args...)
	require.NoError(t, err)
	return c
}

func (e *env) try(t *testing.T, cfg lsp.Config, args ...string) (*lsp.Client, error) {
	t.Helper()
	if cfg.Path == "" {
		cfg.Path, cfg.Args = fakeServer, args
	}
	if cfg.Root == "" {
		cfg.Root = t.TempDir()
	}
	if cfg.Grace == 0 {
		cfg.Grace = 500 * time.Millisecond
	}
	c, err := lsp.Start(ctxT(t, 30*time.Second), e.svc, cfg)
	if err == nil {
		t.Cleanup(func() { c.Close() })
	}
	return c, err
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func writeFile(t *testing.T, dir, name, text string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	return p
}

// jsonEq compares a raw JSON value with the JSON encoding of want.
func jsonEq(t *testing.T, want any, got json.RawMessage, msg ...any) {
	t.Helper()
	w, err := json.Marshal(want)
	require.NoError(t, err)
	require.JSONEq(t, string(w), string(got), msg...)
}

// openFile opens the file name (relative to the workspace root) as a user does: ReadDocument,
// then Open with its FileURI; it returns the URI.
func openFile(ctx context.Context, c *lsp.Client, name string) (string, error) {
	path := name
	if !filepath.IsAbs(path) {
		path = filepath.Join(c.Root(), name)
	}
	text, err := lsp.ReadDocument(path, 0)
	if err != nil {
		return "", err
	}
	uri := lsp.FileURI(path)
	_, err = c.Open(ctx, uri, "", string(text))
	return uri, err
}
