package netproxy

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// mapResolver resolves the names of a map (a name to its addresses) and no other.
func mapResolver(m map[string][]string) func(context.Context, string) ([]netip.Addr, error) {
	return func(ctx context.Context, host string) ([]netip.Addr, error) {
		as, ok := m[host]
		if !ok {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		out := make([]netip.Addr, len(as))
		for i, a := range as {
			out[i] = netip.MustParseAddr(a)
		}
		return out, nil
	}
}

// startProxy serves p on a fresh loopback TCP port until the test ends; Serve must then
// return ErrClosed.
func startProxy(t testing.TB, p *Proxy) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Serve(context.Background(), l) }()
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := <-done; !errors.Is(err, ErrClosed) {
			t.Errorf("Serve returned %v, want ErrClosed", err)
		}
	})
	return l.Addr().String()
}

// newProxy makes a proxy of cfg, serves it, and returns it with its address.
func newProxy(t testing.TB, cfg Config) (*Proxy, string) {
	t.Helper()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p, startProxy(t, p)
}

// port of a listener address.
func portOf(t testing.TB, addr string) string {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// hello is a server answering "hello from HOST" and echoing what it was sent in headers it
// names X-Got-*, so tests see what the proxy forwarded.
func hello() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, h := range []string{"Proxy-Authorization", "Proxy-Connection", "X-Custom", "X-Drop", "Connection"} {
			if v := r.Header.Get(h); v != "" {
				w.Header().Set("X-Got-"+h, v)
			}
		}
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "posted %d bytes\n", len(b))
			return
		}
		fmt.Fprintf(w, "hello from %s\n", r.Host)
	})
}

// testCA is a certificate authority and a server certificate for the names given, written to
// caFile for clients.
type testCA struct {
	caFile string
	pool   *x509.CertPool
	cert   tls.Certificate
}

func newTestCA(t testing.TB, names ...string) *testCA {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "netproxy test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return &testCA{caFile: caFile, pool: pool, cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}}
}

// tlsServer starts an HTTPS server with the CA's certificate.
func (ca *testCA) tlsServer(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewUnstartedServer(h)
	s.TLS = &tls.Config{Certificates: []tls.Certificate{ca.cert}}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// httpServer starts a plain HTTP server on loopback.
func httpServer(t testing.TB, h http.Handler) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s
}

// connectRaw sends a CONNECT for authority over a fresh connection to the proxy and returns
// the connection and the status line and body of the answer (the body only for a refusal).
func connectRaw(t testing.TB, proxyAddr, authority string) (net.Conn, *bufio.Reader, *http.Response) {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", authority, authority); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	return c, br, resp
}

// body reads a response's body.
func body(t testing.TB, resp *http.Response) string {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// socksDial opens a SOCKS5 CONNECT through the proxy: atyp 3 for a name, 1 or 4 for an IP.
// It returns the connection and the reply code.
func socksDial(t testing.TB, proxyAddr, host string, port int) (net.Conn, byte) {
	t.Helper()
	c, err := net.Dial("tcp", proxyAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	req := []byte{5, 1, 0, 5, 1, 0}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Is4() {
			req = append(req, 1)
		} else {
			req = append(req, 4)
		}
		req = append(req, a.AsSlice()...)
	} else {
		req = append(req, 3, byte(len(host)))
		req = append(req, host...)
	}
	req = append(req, byte(port>>8), byte(port))
	if _, err := c.Write(req); err != nil {
		t.Fatal(err)
	}
	var head [2 + 4]byte
	if _, err := io.ReadFull(c, head[:]); err != nil {
		t.Fatal(err)
	}
	if head[0] != 5 || head[1] != 0 || head[2] != 5 {
		t.Fatalf("socks5 head % x", head)
	}
	rest := 4 + 2
	if head[5] == 4 {
		rest = 16 + 2
	}
	if _, err := io.ReadFull(c, make([]byte, rest)); err != nil {
		t.Fatal(err)
	}
	return c, head[3]
}

// getOver sends GET / for host over an open tunnel or SOCKS connection and returns the body.
func getOver(t testing.TB, c net.Conn, host string) string {
	t.Helper()
	if _, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	return body(t, resp)
}

// waitFor polls cond on each event of the proxy's log and connections, failing after a
// generous bound; it is used only for a state the test cannot be told of directly.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func refusedHosts(p *Proxy) string {
	var b strings.Builder
	for _, r := range p.Refused() {
		fmt.Fprintf(&b, "%s:%d x%d; ", r.Host, r.Port, r.Count)
	}
	return b.String()
}
