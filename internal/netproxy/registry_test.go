package netproxy

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// wheel builds a pure-Python wheel of package subkittest 1.0 (subkittest.VALUE = 42).
func wheel(t *testing.T) []byte {
	t.Helper()
	files := []struct{ name, body string }{
		{"subkittest/__init__.py", "VALUE = 42\n"},
		{"subkittest-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: subkittest\nVersion: 1.0\n"},
		{"subkittest-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: netproxy-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	var record strings.Builder
	for _, f := range files {
		w, err := zw.Create(f.name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(f.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.body))
	}
	record.WriteString("subkittest-1.0.dist-info/RECORD,,\n")
	w, err := zw.Create("subkittest-1.0.dist-info/RECORD")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte(record.String())); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// pypi is a simple-API index (PEP 503) serving the wheel.
func pypi(whl []byte) http.Handler {
	const name = "subkittest-1.0-py3-none-any.whl"
	sum := sha256.Sum256(whl)
	mux := http.NewServeMux()
	mux.HandleFunc("/simple/subkittest/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "<!DOCTYPE html><html><body><a href=\"/files/%s#sha256=%s\">%s</a></body></html>\n", name, hex.EncodeToString(sum[:]), name)
	})
	mux.HandleFunc("/files/"+name, func(w http.ResponseWriter, r *http.Request) { w.Write(whl) })
	return mux
}

// TestPipInstall: pip installs a package from an index on an allowed name through the proxy
// (HTTPS_PROXY, a CONNECT tunnel, the index's certificate checked), and an index on a name
// not allowed fails with the reason in pip's output (pip prints it in its retry warning; with
// --retries 0 it says only that no version was found).
func TestPipInstall(t *testing.T) {
	python := needClient(t, "python3")
	if _, _, code := run(t, nil, python, "-m", "pip", "--version"); code != 0 {
		t.Skip("python3 has no pip: this test needs it as the client")
	}
	ca := newTestCA(t, "pypi.test")
	srv := ca.tlsServer(t, pypi(wheel(t)))
	port := portOf(t, srv.Listener.Addr().String())
	p, addr := newProxy(t, Config{
		Allow:    []string{"pypi.test"},
		Resolver: mapResolver(map[string][]string{"pypi.test": {"127.0.0.1"}}),
		Name:     "subkit sandbox",
	})
	home, target := t.TempDir(), t.TempDir()
	proxy := "http://" + addr
	env := []string{"HOME=" + home, "PIP_CONFIG_FILE=" + os.DevNull, "HTTPS_PROXY=" + proxy, "HTTP_PROXY=" + proxy,
		"https_proxy=" + proxy, "http_proxy=" + proxy}
	pip := func(index string) (string, int) {
		out, errOut, code := run(t, env, python, "-m", "pip", "install", "--no-cache-dir", "--disable-pip-version-check",
			"--retries", "1", "--timeout", "60", "--cert", ca.caFile, "--target", target, "--index-url", index, "subkittest")
		return out + errOut, code
	}
	out, code := pip("https://pypi.test:" + port + "/simple")
	if code != 0 {
		t.Fatalf("pip install: exit %d:\n%s", code, out)
	}
	if b, err := os.ReadFile(filepath.Join(target, "subkittest", "__init__.py")); err != nil || string(b) != "VALUE = 42\n" {
		t.Errorf("installed: %q %v\n%s", b, err, out)
	}
	out, code = pip("https://other.test/simple")
	want := "Tunnel connection failed: 403 subkit sandbox: other.test:443 is not in the network allow-list (add --allow other.test)"
	if code == 0 || !strings.Contains(out, want) {
		t.Errorf("pip from a name not allowed: exit %d, output lacks %q:\n%s", code, want, out)
	}
	var tunnels int
	recs, _ := p.Records()
	for _, r := range recs {
		if r.Host == "pypi.test" && r.Verdict == VerdictAllowed && r.Via == "connect" {
			tunnels++
		}
	}
	if tunnels == 0 || len(p.Refused()) != 1 || p.Refused()[0].Host != "other.test" {
		t.Errorf("records %+v, refused %s", recs, refusedHosts(p))
	}
}

// tarball builds an npm package tarball of subkittest 1.0.0 (index.js exports 42).
func tarball(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range []struct{ name, body string }{
		{"package/package.json", `{"name":"subkittest","version":"1.0.0","main":"index.js"}`},
		{"package/index.js", "module.exports = 42;\n"},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// npmRegistry serves the package document and tarball of subkittest at base.
func npmRegistry(tgz []byte, base string) http.Handler {
	s1 := sha1.Sum(tgz)
	s512 := sha512.Sum512(tgz)
	doc, _ := json.Marshal(map[string]any{
		"name":      "subkittest",
		"dist-tags": map[string]string{"latest": "1.0.0"},
		"versions": map[string]any{"1.0.0": map[string]any{
			"name": "subkittest", "version": "1.0.0", "main": "index.js",
			"dist": map[string]string{
				"tarball":   base + "/subkittest/-/subkittest-1.0.0.tgz",
				"shasum":    hex.EncodeToString(s1[:]),
				"integrity": "sha512-" + base64.StdEncoding.EncodeToString(s512[:]),
			},
		}},
	})
	mux := http.NewServeMux()
	mux.HandleFunc("/subkittest", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(doc)
	})
	mux.HandleFunc("/subkittest/-/subkittest-1.0.0.tgz", func(w http.ResponseWriter, r *http.Request) { w.Write(tgz) })
	return mux
}

// TestNpmInstall: npm installs a package from a registry on an allowed name through the
// proxy (its https-proxy setting taken from HTTPS_PROXY); a registry on a name not allowed
// fails with the reason in npm's error, and the refusal is recorded.
func TestNpmInstall(t *testing.T) {
	npm := needClient(t, "npm")
	ca := newTestCA(t, "registry.npm.test")
	var handler http.Handler
	srv := ca.tlsServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	base := "https://registry.npm.test:" + portOf(t, srv.Listener.Addr().String())
	handler = npmRegistry(tarball(t), base)
	p, addr := newProxy(t, Config{
		Allow:    []string{"*.npm.test"},
		Resolver: mapResolver(map[string][]string{"registry.npm.test": {"127.0.0.1"}}),
		Name:     "subkit sandbox",
	})
	// The registry is on loopback, which a wildcard may not reach: count 127.0.0.1 as public,
	// as a registry on the internet would be.
	p.classify = func(a netip.Addr, own []netip.Addr) string {
		if a == netip.MustParseAddr("127.0.0.1") {
			return ""
		}
		return specialKind(a, own)
	}
	work, home := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(work, "package.json"), []byte(`{"name":"w","version":"1.0.0","private":true}`), 0o644); err != nil {
		t.Fatal(err)
	}
	proxy := "http://" + addr
	env := []string{"HOME=" + home, "HTTPS_PROXY=" + proxy, "HTTP_PROXY=" + proxy, "https_proxy=" + proxy, "http_proxy=" + proxy,
		"npm_config_cafile=" + ca.caFile, "npm_config_cache=" + filepath.Join(home, "cache"), "npm_config_userconfig=" + os.DevNull,
		"npm_config_update_notifier=false", "npm_config_fetch_retries=0", "npm_config_audit=false", "npm_config_fund=false"}
	npmIn := func(registry string) (string, int) {
		out, errOut, code := run(t, env, npm, "install", "--prefix", work, "--registry", registry, "subkittest")
		return out + errOut, code
	}
	out, code := npmIn(base + "/")
	if code != 0 {
		t.Fatalf("npm install: exit %d:\n%s", code, out)
	}
	if b, err := os.ReadFile(filepath.Join(work, "node_modules", "subkittest", "index.js")); err != nil || string(b) != "module.exports = 42;\n" {
		t.Errorf("installed: %q %v\n%s", b, err, out)
	}
	if err := os.RemoveAll(filepath.Join(work, "node_modules")); err != nil {
		t.Fatal(err)
	}
	out, code = npmIn("https://npm.test/")
	want := "403 subkit sandbox: npm.test:443 is not in the network allow-list (add --allow npm.test)"
	if code == 0 || !strings.Contains(out, want) {
		t.Errorf("npm from a name not allowed: exit %d, output lacks %q:\n%s", code, want, out)
	}
	refused := p.Refused()
	if len(refused) != 1 || refused[0].Host != "npm.test" || refused[0].Port != 443 ||
		refused[0].Reason != "subkit sandbox: npm.test:443 is not in the network allow-list (add --allow npm.test)" {
		t.Errorf("refused %s\nnpm said:\n%s", refusedHosts(p), out)
	}
}
