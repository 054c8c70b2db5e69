package subprocess_test

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/procinspect"
	"github.com/subkit/subkit/sandbox"
	"github.com/subkit/subkit/subprocess"
)

// A sandboxed tree writes only inside its writable roots, keeps its pid through the helper's
// exec, says how it was confined, and works the same under the guard and on a terminal.
func TestSandboxedSpawn(t *testing.T) {
	for _, guard := range []bool{false, true} {
		work := t.TempDir()
		outside := t.TempDir()
		svc := newService(t, subprocess.Config{Guard: guard, Sandbox: &sandbox.Policy{Writable: []string{work}}})
		res := run(t, svc, sh(`touch `+work+`/ok && echo inside; touch `+outside+`/no 2>&1; echo "tmp=$TMPDIR"; touch "$TMPDIR/t" && echo tmp-ok`))
		require.NotNil(t, res.Sandbox, "guard %v", guard)
		assert.NotEmpty(t, res.Sandbox.Backend)
		out := string(res.Stdout.Tail)
		assert.Contains(t, out, "inside\n", "guard %v", guard)
		assert.Contains(t, out, "tmp-ok", "guard %v: the private TMPDIR is writable", guard)
		assert.FileExists(t, filepath.Join(work, "ok"))
		assert.NoFileExists(t, filepath.Join(outside, "no"), "guard %v: a write outside the writable roots", guard)

		// The pid is the program's where the helper execs it in place; else the program is in
		// the tree the pid leads.
		h, err := svc.Spawn(context.Background(), subprocess.Spec{Path: "sleep", Args: []string{"1000"}})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			tab, err := procinspect.Snapshot(context.Background())
			if err != nil {
				return false
			}
			p, ok := tab.Get(h.Pid())
			if res.Sandbox.SamePid || !ok {
				return ok && p.Comm == "sleep"
			}
			return slices.ContainsFunc(tab.Descendants(p.Identity), func(d procinspect.Proc) bool { return d.Comm == "sleep" })
		}, 10*time.Second, 5*time.Millisecond)
		assert.Equal(t, []string{"sleep", "1000"}, h.Argv())
		require.NoError(t, h.Terminate(ctxT(t, 10*time.Second)))
		require.NoError(t, h.Close())

		// A terminal inside the sandbox.
		term, err := svc.Spawn(context.Background(), subprocess.Spec{
			Path: "bash", Args: []string{"--norc", "--noprofile", "-i"}, Env: []string{"PS1=$ ", "TERM=dumb"},
			Grace: 500 * time.Millisecond, TTY: &subprocess.TTY{}})
		require.NoError(t, err)
		require.NotNil(t, term.Sandbox())
		_, err = term.Write([]byte("touch " + outside + "/t2 || echo denied-$((40+2))\n"))
		require.NoError(t, err)
		screenWait(t, term, "denied-42")
		require.NoError(t, term.Close())
		assert.NoFileExists(t, filepath.Join(outside, "t2"))
	}
}

// A Spec's own policy overrides the Service's; a Service without one runs trees unconfined.
func TestSandboxPerSpec(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	res := run(t, svc, sh(`true`))
	assert.Nil(t, res.Sandbox)
	hidden := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(hidden, []byte("s3cret"), 0o600))
	spec := sh(`cat ` + hidden + ` 2>&1; echo done`)
	spec.Sandbox = &sandbox.Policy{Writable: []string{t.TempDir()}, Hidden: []string{hidden}}
	res = run(t, svc, spec)
	require.NotNil(t, res.Sandbox)
	assert.NotContains(t, string(res.Stdout.Tail), "s3cret")
	assert.True(t, strings.HasSuffix(string(res.Stdout.Tail), "done\n"))

	spec.Sandbox = &sandbox.Policy{Writable: []string{"no-such-dir"}}
	_, err := svc.Spawn(context.Background(), spec)
	assert.ErrorIs(t, err, subprocess.ErrNotFound)
	assert.ErrorContains(t, err, "Policy.Writable[0]")
	spec.Sandbox = &sandbox.Policy{Network: sandbox.Network(9)}
	_, err = svc.Spawn(context.Background(), spec)
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
}

// With sandbox.NetworkAllowList the program reaches an allowed host through the Service's
// proxy (found by curl through HTTP_PROXY) and nothing else; the Result's Report lists what the
// proxy refused, and nothing of the proxy outlives the program, under the guard too.
func TestSandboxNetworkAllowList(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl here (make deps installs it)")
	}
	l := testutil.HostListener(t)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ALLOWED-BODY\n") })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	allowed := l.Addr().String()
	for _, guard := range []bool{false, true} {
		svc := newService(t, subprocess.Config{Guard: guard})
		pol := &sandbox.Policy{Network: sandbox.NetworkAllowList, Allow: []string{allowed}}
		spec := sh(`curl -sS --max-time 30 http://` + allowed + `/; curl -sS --max-time 30 http://not-allowed.invalid/ 2>&1; echo "status=$?"
curl -sS --max-time 30 --noproxy '*' http://` + allowed + `/ 2>&1; echo "direct=$?"`)
		spec.Sandbox = pol
		h, err := svc.Spawn(context.Background(), spec)
		if errors.Is(err, subprocess.ErrUnsupported) {
			t.Skipf("no namespaces backend here: %v", err)
		}
		require.NoError(t, err)
		res, err := h.Wait(ctxT(t, time.Minute))
		require.NoError(t, err)
		require.NoError(t, h.Close())
		out := string(res.Stdout.Tail)
		assert.Contains(t, out, "ALLOWED-BODY\n", "guard %v: %s", guard, out)
		assert.Contains(t, out, "subkit proxy: not-allowed.invalid:80 is not in the network allow-list (add --allow not-allowed.invalid)\n",
			"guard %v: curl shows the proxy's refusal: %s", guard, out)
		assert.Contains(t, out, "direct=7", "guard %v: %s", guard, out)
		require.NotNil(t, res.Sandbox)
		assert.Equal(t, "allow-list through the proxy", res.Sandbox.Network)
		require.Len(t, res.Sandbox.NetworkRefused, 1, "guard %v: %q", guard, res.Sandbox.NetworkRefused)
		assert.Equal(t, "not-allowed.invalid:80 is not in the network allow-list (add --allow not-allowed.invalid)", res.Sandbox.NetworkRefused[0])
		socks, err := filepath.Glob(filepath.Join(svc.RuntimeRoot(), "px-*"))
		require.NoError(t, err)
		assert.Empty(t, socks, "the proxy's socket is gone with the program")
	}
}

// A registry the test serves (a pip index and an npm registry over HTTP, on an address of this
// host): pip install into a venv and npm install in the workspace, inside a sandbox whose
// allow-list names the registry, go through the proxy and install the package.
func TestSandboxAllowListPackageInstall(t *testing.T) {
	l := testutil.HostListener(t)
	ip, _, _ := net.SplitHostPort(l.Addr().String())
	registry := "http://" + l.Addr().String()
	files := registryFiles(t, registry)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(b)
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })

	svc := newService(t, subprocess.Config{})
	work := t.TempDir()
	pol := &sandbox.Policy{Writable: []string{work}, Network: sandbox.NetworkAllowList, Allow: []string{l.Addr().String()}}
	for _, c := range []struct{ tool, script, want string }{
		{"python3", `python3 -m venv v && v/bin/pip install -q --disable-pip-version-check --index-url ` + registry + `/simple/ --trusted-host ` + ip + ` demo-pkg && v/bin/python -c 'import demo_pkg; print(demo_pkg.MARK)'`, "DEMO-PY-MARK"},
		{"npm", `npm install --no-audit --no-fund --registry ` + registry + `/ demo-pkg >/dev/null && node -e 'console.log(require("demo-pkg"))'`, "DEMO-JS-MARK"},
	} {
		if _, err := exec.LookPath(c.tool); err != nil {
			t.Logf("no %s here: its install is not tried", c.tool)
			continue
		}
		spec := sh(c.script)
		spec.Sandbox, spec.Dir = pol, work
		h, err := svc.Spawn(context.Background(), spec)
		if errors.Is(err, subprocess.ErrUnsupported) {
			t.Skipf("no namespaces backend here: %v", err)
		}
		require.NoError(t, err)
		res, err := h.Wait(ctxT(t, 3*time.Minute))
		require.NoError(t, err)
		require.NoError(t, h.Close())
		require.Equal(t, 0, res.ExitCode, "%s: %s %s", c.tool, res.Stdout.Tail, res.Stderr.Tail)
		assert.Contains(t, string(res.Stdout.Tail), c.want, c.tool)
		assert.Empty(t, res.Sandbox.NetworkRefused, c.tool)
	}
}

// registryFiles are the paths a one-package pip index and npm registry at base serve.
func registryFiles(t *testing.T, base string) map[string][]byte {
	var whl bytes.Buffer
	z := zip.NewWriter(&whl)
	for name, body := range map[string]string{
		"demo_pkg/__init__.py":                 "MARK = 'DEMO-PY-MARK'\n",
		"demo_pkg-1.0.dist-info/METADATA":      "Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n",
		"demo_pkg-1.0.dist-info/WHEEL":         "Wheel-Version: 1.0\nGenerator: subkit-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
		"demo_pkg-1.0.dist-info/top_level.txt": "demo_pkg\n",
		"demo_pkg-1.0.dist-info/RECORD":        "",
	} {
		w, err := z.Create(name)
		require.NoError(t, err)
		_, err = io.WriteString(w, body)
		require.NoError(t, err)
	}
	require.NoError(t, z.Close())

	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	for name, body := range map[string]string{
		"package/package.json": `{"name": "demo-pkg", "version": "1.0.0", "main": "index.js"}`,
		"package/index.js":     `module.exports = "DEMO-JS-MARK";` + "\n",
	} {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}))
		_, err := io.WriteString(tw, body)
		require.NoError(t, err)
	}
	require.NoError(t, errors.Join(tw.Close(), gz.Close()))
	sum := sha1.Sum(tgz.Bytes())
	packument, err := json.Marshal(map[string]any{"name": "demo-pkg", "dist-tags": map[string]string{"latest": "1.0.0"},
		"versions": map[string]any{"1.0.0": map[string]any{"name": "demo-pkg", "version": "1.0.0",
			"dist": map[string]string{"tarball": base + "/demo-pkg/-/demo-pkg-1.0.0.tgz", "shasum": hex.EncodeToString(sum[:])}}}})
	require.NoError(t, err)
	const wheel = "demo_pkg-1.0-py3-none-any.whl"
	return map[string][]byte{
		"/simple/demo-pkg/":              []byte(`<html><body><a href="/files/` + wheel + `">` + wheel + `</a></body></html>`),
		"/files/" + wheel:                whl.Bytes(),
		"/demo-pkg":                      packument,
		"/demo-pkg/-/demo-pkg-1.0.0.tgz": tgz.Bytes(),
	}
}
