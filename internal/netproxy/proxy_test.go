package netproxy

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestAllowedGoClient: an allowed name over plain HTTP (forwarded), HTTPS (a CONNECT tunnel,
// the certificate checked for the name end to end) and SOCKS5, with net/http's own client,
// and the records they leave.
func TestAllowedGoClient(t *testing.T) {
	ca := newTestCA(t, "tls.test")
	plain := httpServer(t, hello())
	secure := ca.tlsServer(t, hello())
	p, addr := newProxy(t, Config{
		Allow:    []string{"pkg.test", "tls.test:" + portOf(t, secure.Listener.Addr().String())},
		Resolver: mapResolver(map[string][]string{"pkg.test": {"127.0.0.1"}, "tls.test": {"127.0.0.1"}}),
	})
	tr := &http.Transport{
		Proxy:           http.ProxyURL(&url.URL{Scheme: "http", Host: addr}),
		TLSClientConfig: &tls.Config{RootCAs: ca.pool},
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	plainURL := "http://pkg.test:" + portOf(t, plain.Listener.Addr().String()) + "/"
	secureURL := "https://tls.test:" + portOf(t, secure.Listener.Addr().String()) + "/"
	for _, u := range []string{plainURL, secureURL} {
		resp, err := client.Get(u)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		got := body(t, resp)
		if resp.StatusCode != 200 || !strings.HasPrefix(got, "hello from ") {
			t.Errorf("GET %s: %d %q", u, resp.StatusCode, got)
		}
	}
	tr.CloseIdleConnections() // the tunnel ends: its record gets its end

	c, code := socksDial(t, addr, "pkg.test", plain.Listener.Addr().(*net.TCPAddr).Port)
	if code != 0 {
		t.Fatalf("socks5 reply %d", code)
	}
	if got := getOver(t, c, "pkg.test"); got != "hello from pkg.test\n" {
		t.Errorf("socks5: %q", got)
	}
	c.Close()

	waitFor(t, "three ended records", func() bool {
		recs, _ := p.Records()
		return len(recs) == 3 && !recs[0].End.IsZero() && !recs[1].End.IsZero() && !recs[2].End.IsZero()
	})
	recs, dropped := p.Records()
	if dropped != 0 {
		t.Errorf("dropped %d", dropped)
	}
	for i, want := range []struct{ host, via string }{{"pkg.test", "http"}, {"tls.test", "connect"}, {"pkg.test", "socks5"}} {
		r := recs[i]
		// Windows (Wine too) resets a connection closed with data unread, as the TLS client's
		// tunnel may be: the relay then records the client's reset.
		clientReset := runtime.GOOS == "windows" && want.via == "connect" && strings.Contains(r.Error, "reset by peer")
		if r.Host != want.host || r.Via != want.via || r.Verdict != VerdictAllowed || !strings.HasPrefix(r.Reason, "allowed by ") ||
			r.BytesDown == 0 || !strings.HasPrefix(r.Addr, "127.0.0.1:") || (r.Error != "" && !clientReset) || r.Start.IsZero() || r.End.IsZero() {
			t.Errorf("record %d: %+v", i, r)
		}
	}
	if recs[0].BytesDown != int64(len("hello from pkg.test:")+len(portOf(t, plain.Listener.Addr().String()))+1) {
		t.Errorf("http record: %d bytes down", recs[0].BytesDown)
	}
	if recs[1].BytesUp == 0 {
		t.Errorf("tunnel record: no bytes up")
	}
	if n := len(p.Refused()); n != 0 {
		t.Errorf("Refused: %s", refusedHosts(p))
	}
}

// refusalCase is a destination a client asks for and the reason it must be shown.
type refusalCase struct {
	host   string
	port   int
	reason string
}

// TestRefusals: each kind of refusal over CONNECT, plain HTTP and SOCKS5, with the reason in
// the status line and the body, SOCKS5 reply 2, and the refusals summed by Refused.
func TestRefusals(t *testing.T) {
	srv := httpServer(t, hello())
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	p, addr := newProxy(t, Config{
		Allow: []string{"pkg.test", "*.wild.test", "local.test", "169.254.0.0/16:80", "*.npmjs.test"},
		Deny:  []string{"bad.wild.test", "10.0.0.0/8"},
		Resolver: mapResolver(map[string][]string{
			"pkg.test": {"127.0.0.1"}, "bad.wild.test": {"192.0.2.1"}, "meta.wild.test": {"169.254.169.254"},
			"local.wild.test": {"127.0.0.1"}, "local.test": {"127.0.0.1"}, "lan.wild.test": {"10.1.2.3"},
		}),
		Name: "subkit sandbox",
	})
	ps := strconv.Itoa(port)
	cases := []refusalCase{
		{"other.test", 443, "other.test:443 is not in the network allow-list (add --allow other.test)"},
		{"bad.wild.test", 443, "bad.wild.test:443 is denied by the network deny-list pattern bad.wild.test"},
		{"127.0.0.1", port, "127.0.0.1:" + ps + " is an IP address, which only an IP or CIDR pattern allows (add --allow 127.0.0.1)"},
		{"169.254.169.254", 443, "169.254.169.254:443 is an IP address, which only an IP or CIDR pattern allows (add --allow 169.254.169.254:443)"},
		{"meta.wild.test", 80, "meta.wild.test:80 resolves to 169.254.169.254, a link-local address, which only a pattern naming the host exactly allows (add --allow meta.wild.test)"},
		{"local.wild.test", port, "local.wild.test:" + ps + " resolves to 127.0.0.1, a loopback address, which only a pattern naming the host exactly allows (add --allow local.wild.test)"},
		{"lan.wild.test", 80, "lan.wild.test:80 resolves to 10.1.2.3, denied by the network deny-list pattern 10.0.0.0/8"},
		{"npmjs.test", 443, "npmjs.test:443 is not in the network allow-list (add --allow npmjs.test)"},
		{"evilnpmjs.test", 443, "evilnpmjs.test:443 is not in the network allow-list (add --allow evilnpmjs.test)"},
		{"[::1]", 443, "[::1]:443 is an IP address, which only an IP or CIDR pattern allows (add --allow [::1])"},
	}
	for _, tc := range cases {
		want := "subkit sandbox: " + tc.reason
		authority := net.JoinHostPort(strings.Trim(tc.host, "[]"), strconv.Itoa(tc.port))
		_, _, resp := connectRaw(t, addr, authority)
		if got := body(t, resp); resp.StatusCode != 403 || resp.Status != "403 "+want || got != want+"\n" {
			t.Errorf("CONNECT %s: %q, body %q; want %q", authority, resp.Status, got, want)
		}
	}
	// Plain HTTP: the same answers.
	for _, tc := range cases[:3] {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		authority := net.JoinHostPort(tc.host, strconv.Itoa(tc.port))
		fmt.Fprintf(c, "POST http://%s/x HTTP/1.1\r\nHost: %s\r\nContent-Length: 5\r\n\r\nhello", authority, authority)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		want := "subkit sandbox: " + tc.reason
		if got := body(t, resp); resp.StatusCode != 403 || got != want+"\n" {
			t.Errorf("GET http://%s/: %q, body %q", authority, resp.Status, got)
		}
		c.Close()
	}
	// SOCKS5: reply 2.
	for _, tc := range cases {
		if _, code := socksDial(t, addr, strings.Trim(tc.host, "[]"), tc.port); code != socksNotAllowed {
			t.Errorf("socks5 %s: reply %d, want 2", tc.host, code)
		}
	}
	// Named exactly, a loopback address is reached.
	c, _, resp := connectRaw(t, addr, "local.test:"+ps)
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT local.test: %s", resp.Status)
	}
	if got := getOver(t, c, "local.test"); got != "hello from local.test\n" {
		t.Errorf("local.test: %q", got)
	}

	refused := p.Refused()
	if len(refused) != len(cases) {
		t.Fatalf("Refused: %s", refusedHosts(p))
	}
	for i, tc := range cases {
		r := refused[i]
		wantCount := 2 // CONNECT and SOCKS5
		if i < 3 {
			wantCount = 3 // and plain HTTP
		}
		tg, _ := parseHostPort(net.JoinHostPort(strings.Trim(tc.host, "[]"), strconv.Itoa(tc.port)), 0)
		if r.Host != tg.host || r.Port != tc.port || r.Count != wantCount || r.Verdict != VerdictRefused ||
			r.Reason != "subkit sandbox: "+tc.reason {
			t.Errorf("Refused[%d]: %+v, want %s x%d", i, r, tc.host, wantCount)
		}
	}
	recs, _ := p.Records()
	if n := len(recs); n != 3+2*len(cases)+1 {
		t.Errorf("%d records", n)
	}
}

// TestWildcardAllowed: a wildcard reaches the names below it, not the domain itself nor a
// name that merely ends the same way. The test servers are on loopback, which a wildcard may
// not reach, so the test counts 127.0.0.1 as a public address.
func TestWildcardAllowed(t *testing.T) {
	srv := httpServer(t, hello())
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	p, err := New(Config{
		Allow: []string{"*.npmjs.test"},
		Resolver: mapResolver(map[string][]string{
			"a.npmjs.test": {"127.0.0.1"}, "b.a.npmjs.test": {"127.0.0.1"}, "npmjs.test": {"127.0.0.1"}, "evilnpmjs.test": {"127.0.0.1"},
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	p.classify = func(a netip.Addr, own []netip.Addr) string {
		if a == netip.MustParseAddr("127.0.0.1") {
			return ""
		}
		return specialKind(a, own)
	}
	addr := startProxy(t, p)
	for _, tc := range []struct {
		host string
		ok   bool
	}{{"a.npmjs.test", true}, {"B.A.npmjs.test.", true}, {"npmjs.test", false}, {"evilnpmjs.test", false}} {
		c, _, resp := connectRaw(t, addr, tc.host+":"+strconv.Itoa(port))
		if (resp.StatusCode == 200) != tc.ok {
			t.Errorf("%s: %s", tc.host, resp.Status)
			continue
		}
		if tc.ok {
			if got := getOver(t, c, "x"); got != "hello from x\n" {
				t.Errorf("%s: %q", tc.host, got)
			}
		}
	}
}

// TestDialFailures: an allowed host that cannot be resolved or reached is 502 (SOCKS5 4 or
// 5), recorded as allowed with the error.
func TestDialFailures(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := l.Addr().(*net.TCPAddr).Port
	l.Close()
	p, addr := newProxy(t, Config{
		Allow:    []string{"down.test", "nx.test"},
		Resolver: mapResolver(map[string][]string{"down.test": {"127.0.0.1"}}),
	})
	for _, tc := range []struct {
		host      string
		reason    string
		socksCode byte
	}{
		{"down.test", "cannot connect", socksConnRefused},
		{"nx.test", "cannot resolve nx.test", socksHostUnreachable},
	} {
		_, _, resp := connectRaw(t, addr, tc.host+":"+strconv.Itoa(closedPort))
		if got := body(t, resp); resp.StatusCode != 502 || !strings.Contains(got, tc.reason) {
			t.Errorf("%s: %s %q", tc.host, resp.Status, got)
		}
		if _, code := socksDial(t, addr, tc.host, closedPort); code != tc.socksCode {
			t.Errorf("%s: socks5 reply %d, want %d", tc.host, code, tc.socksCode)
		}
	}
	recs, _ := p.Records()
	for _, r := range recs {
		if r.Verdict != VerdictAllowed || r.Error == "" || r.End.IsZero() {
			t.Errorf("record %+v", r)
		}
	}
	if len(recs) != 4 || len(p.Refused()) != 0 {
		t.Errorf("%d records, refused %s", len(recs), refusedHosts(p))
	}
}

// TestHopByHopHeaders: what is meant for the proxy, and what Connection names, is not
// forwarded; the rest is.
func TestHopByHopHeaders(t *testing.T) {
	srv := httpServer(t, hello())
	_, addr := newProxy(t, Config{Allow: []string{"pkg.test"}, Resolver: mapResolver(map[string][]string{"pkg.test": {"127.0.0.1"}})})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	u := "http://pkg.test:" + portOf(t, srv.Listener.Addr().String()) + "/"
	fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: pkg.test\r\nProxy-Authorization: Basic c2VjcmV0\r\nProxy-Connection: keep-alive\r\n"+
		"Connection: X-Drop\r\nX-Drop: 1\r\nX-Custom: kept\r\n\r\n", u)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body(t, resp)
	for _, h := range []string{"Proxy-Authorization", "Proxy-Connection", "X-Drop", "Connection"} {
		if v := resp.Header.Get("X-Got-" + h); v != "" {
			t.Errorf("%s was forwarded: %q", h, v)
		}
	}
	if v := resp.Header.Get("X-Got-X-Custom"); v != "kept" {
		t.Errorf("X-Custom: %q", v)
	}
	// A request that is not for a proxy (no absolute URI) is refused.
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: pkg.test\r\n\r\n")
	resp, err = http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := body(t, resp); resp.StatusCode != 400 || !strings.Contains(got, "needs an absolute http:// URI") {
		t.Errorf("origin-form request: %s %q", resp.Status, got)
	}
}

// eofServer answers each connection, once the client has ended its side, with the number of
// bytes it read, then closes: a half-close must cross the proxy.
func eofServer(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				n, _ := io.Copy(io.Discard, c)
				fmt.Fprintf(c, "read %d bytes", n)
			}()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// TestHalfClose: a client that ends its side of a tunnel still reads the answer, and the
// record counts the bytes each way exactly.
func TestHalfClose(t *testing.T) {
	port := eofServer(t)
	p, addr := newProxy(t, Config{Allow: []string{"eof.test"}, Resolver: mapResolver(map[string][]string{"eof.test": {"127.0.0.1"}})})
	payload := strings.Repeat("x", 3<<20+17)
	for _, via := range []string{"connect", "socks5"} {
		var c net.Conn
		if via == "connect" {
			var resp *http.Response
			c, _, resp = connectRaw(t, addr, "eof.test:"+strconv.Itoa(port))
			if resp.StatusCode != 200 {
				t.Fatal(resp.Status)
			}
		} else {
			var code byte
			if c, code = socksDial(t, addr, "eof.test", port); code != 0 {
				t.Fatal(code)
			}
		}
		if _, err := io.WriteString(c, payload); err != nil {
			t.Fatal(err)
		}
		if err := c.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(c)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("read %d bytes", len(payload)); string(got) != want {
			t.Errorf("%s: %q, want %q", via, got, want)
		}
		c.Close()
	}
	waitFor(t, "both tunnels ended", func() bool {
		recs, _ := p.Records()
		return len(recs) == 2 && !recs[0].End.IsZero() && !recs[1].End.IsZero()
	})
	recs, _ := p.Records()
	for _, r := range recs {
		if r.BytesUp != int64(len(payload)) || r.BytesDown != int64(len(fmt.Sprintf("read %d bytes", len(payload)))) || r.Error != "" {
			t.Errorf("%s: up %d down %d error %q", r.Via, r.BytesUp, r.BytesDown, r.Error)
		}
	}
}

// TestConcurrencyBounded: 300 clients at once; 256 are served, the rest wait in the backlog
// and are served as others leave; the destination never sees more than 256 at once.
func TestConcurrencyBounded(t *testing.T) {
	const clients = 300
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var cur, peak atomic.Int64
	var srvWG sync.WaitGroup
	t.Cleanup(func() { l.Close(); srvWG.Wait() })
	srvWG.Add(1)
	go func() {
		defer srvWG.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n := cur.Add(1)
			for {
				m := peak.Load()
				if n <= m || peak.CompareAndSwap(m, n) {
					break
				}
			}
			srvWG.Add(1)
			go func() {
				defer srvWG.Done()
				io.Copy(io.Discard, c)
				cur.Add(-1)
				c.Close()
			}()
		}
	}()
	port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
	p, addr := newProxy(t, Config{Allow: []string{"sink.test"}, Resolver: mapResolver(map[string][]string{"sink.test": {"127.0.0.1"}})})

	established := make(chan int, clients)
	release := make(chan struct{})
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", addr)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			fmt.Fprintf(c, "CONNECT sink.test:%s HTTP/1.1\r\nHost: sink.test\r\n\r\n", port)
			resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
			if err != nil || resp.StatusCode != 200 {
				errs <- fmt.Errorf("client %d: %v %v", i, resp, err)
				return
			}
			established <- i
			<-release
		}()
	}
	for range DefaultMaxConns {
		select {
		case <-established:
		case err := <-errs:
			t.Fatal(err)
		}
	}
	if n := len(p.sem); n != DefaultMaxConns {
		t.Errorf("%d connections held, want %d", n, DefaultMaxConns)
	}
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := len(established) + DefaultMaxConns; n != clients {
		t.Errorf("%d of %d clients served", n, clients)
	}
	if m := peak.Load(); m > DefaultMaxConns {
		t.Errorf("the destination saw %d connections at once", m)
	}
}

// TestSlowClients: a client that never finishes its request head is dropped after
// HeadTimeout (HTTP and SOCKS5, and one that sends nothing), while others are served; a head
// over MaxHeaderBytes is refused.
func TestSlowClients(t *testing.T) {
	srv := httpServer(t, hello())
	_, addr := newProxy(t, Config{
		Allow:       []string{"pkg.test"},
		Resolver:    mapResolver(map[string][]string{"pkg.test": {"127.0.0.1"}}),
		HeadTimeout: 2 * time.Second,
	})
	slow := make([]net.Conn, 0, 3)
	for _, start := range []string{"CONNECT pkg.test:443 HTTP/1.1\r\nHost: pkg.test\r\nX-A: ", "\x05\x01\x00\x05\x01", ""} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, start); err != nil {
			t.Fatal(err)
		}
		slow = append(slow, c)
	}
	// Others are served meanwhile.
	c, _, resp := connectRaw(t, addr, "pkg.test:"+portOf(t, srv.Listener.Addr().String()))
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	if got := getOver(t, c, "pkg.test"); got != "hello from pkg.test\n" {
		t.Errorf("%q", got)
	}
	for i, c := range slow {
		done := make(chan error, 1)
		go func() {
			_, err := io.Copy(io.Discard, c) // returns once the proxy drops the client
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("slow client %d: %v", i, err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("slow client %d was not dropped", i)
		}
	}
	// An oversized head.
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	go fmt.Fprintf(c2, "GET http://pkg.test/ HTTP/1.1\r\nHost: pkg.test\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", 2*MaxHeaderBytes))
	resp2, err := http.ReadResponse(bufio.NewReader(c2), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp2.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("oversized head: %s", resp2.Status)
	}
}

// TestCloseEndsTunnels: Close ends open tunnels of both kinds, waits for them, and is safe to
// call twice; Serve afterwards returns ErrClosed. A Serve whose context ends returns its error.
func TestCloseEndsTunnels(t *testing.T) {
	port := eofServer(t)
	p, err := New(Config{Allow: []string{"eof.test"}, Resolver: mapResolver(map[string][]string{"eof.test": {"127.0.0.1"}})})
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(context.Background(), l) }()
	addr := l.Addr().String()
	c1, _, resp := connectRaw(t, addr, "eof.test:"+strconv.Itoa(port))
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	c2, code := socksDial(t, addr, "eof.test", port)
	if code != 0 {
		t.Fatal(code)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []net.Conn{c1, c2} {
		if _, err := io.Copy(io.Discard, c); err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("read after Close: %v", err)
		}
	}
	if err := <-served; !errors.Is(err, ErrClosed) {
		t.Errorf("Serve: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	l2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Serve(context.Background(), l2); !errors.Is(err, ErrClosed) {
		t.Errorf("Serve after Close: %v", err)
	}
	if _, err := l2.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Serve after Close left its listener open: %v", err)
	}
	recs, _ := p.Records()
	for _, r := range recs {
		if r.End.IsZero() {
			t.Errorf("open after Close: %+v", r)
		}
	}

	// A Serve whose context ends.
	p2, err := New(Config{Allow: []string{"eof.test"}, Resolver: mapResolver(map[string][]string{"eof.test": {"127.0.0.1"}})})
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	l3, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { served <- p2.Serve(ctx, l3) }()
	c3, _, resp := connectRaw(t, l3.Addr().String(), "eof.test:"+strconv.Itoa(port))
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	cancel()
	if _, err := io.Copy(io.Discard, c3); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("read after cancel: %v", err)
	}
	if err := <-served; !errors.Is(err, context.Canceled) {
		t.Errorf("Serve: %v", err)
	}
}

// TestRecordsBounded: the log keeps the newest MaxRecords and counts the dropped ones.
func TestRecordsBounded(t *testing.T) {
	p, addr := newProxy(t, Config{Allow: []string{"pkg.test"}, MaxRecords: 3})
	for i := range 5 {
		connectRaw(t, addr, fmt.Sprintf("h%d.test:443", i))
	}
	connectRaw(t, addr, "h4.test:443")
	recs, dropped := p.Records()
	if len(recs) != 3 || dropped != 3 || recs[0].Host != "h3.test" || recs[2].Host != "h4.test" {
		t.Errorf("%d records, %d dropped: %+v", len(recs), dropped, recs)
	}
	refused := p.Refused()
	if len(refused) != 3 || refused[0].Host != "h0.test" || refused[2].Host != "h2.test" {
		t.Errorf("Refused: %s", refusedHosts(p))
	}
}

// TestSOCKSErrors: a client that offers no method the proxy takes gets 0xFF; an unsupported
// command or address type gets its reply code; none is recorded.
func TestSOCKSErrors(t *testing.T) {
	p, addr := newProxy(t, Config{Allow: []string{"pkg.test"}})
	for _, tc := range []struct {
		name string
		send []byte
		want []byte
	}{
		{"username/password only", []byte{5, 1, 2}, []byte{5, 0xff}},
		{"BIND", []byte{5, 1, 0, 5, 2, 0, 3, 8, 'p', 'k', 'g', '.', 't', 'e', 's', 't', 0, 80}, []byte{5, 0, 5, socksBadCommand}},
		{"UDP ASSOCIATE", []byte{5, 1, 0, 5, 3, 0, 1, 0, 0, 0, 0, 0, 0}, []byte{5, 0, 5, socksBadCommand}},
		{"address type 9", []byte{5, 1, 0, 5, 1, 0, 9}, []byte{5, 0, 5, socksBadAddrType}},
		{"empty name", []byte{5, 1, 0, 5, 1, 0, 3, 0, 0, 80}, []byte{5, 0, 5, socksNotAllowed}},
		{"request of version 4", []byte{5, 1, 0, 4, 1, 0, 1, 1, 2, 3, 4, 0, 80}, []byte{5, 0, 5, socksFailure}},
	} {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Write(tc.send); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(c) // the proxy closes after its answer
		c.Close()
		if err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if len(got) < len(tc.want) || string(got[:len(tc.want)]) != string(tc.want) {
			t.Errorf("%s: got % x, want % x...", tc.name, got, tc.want)
		}
	}
	if recs, _ := p.Records(); len(recs) != 0 {
		t.Errorf("records: %+v", recs)
	}
}

// TestResolvedOnce: each request resolves its name once and dials what that resolution gave:
// a resolver that answers the loopback server first and an unroutable address afterwards (a
// rebinding attacker) cannot redirect the dial.
func TestResolvedOnce(t *testing.T) {
	srv := httpServer(t, hello())
	var calls atomic.Int64
	p, addr := newProxy(t, Config{
		Allow: []string{"pkg.test"},
		Resolver: func(ctx context.Context, host string) ([]netip.Addr, error) {
			if calls.Add(1)%2 == 1 {
				return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
			}
			return []netip.Addr{netip.MustParseAddr("192.0.2.1")}, nil // TEST-NET-1: never answers
		},
	})
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: addr}), DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	port := portOf(t, srv.Listener.Addr().String())
	for i := range 3 {
		calls.Store(0)
		resp, err := client.Get("http://pkg.test:" + port + "/")
		if err != nil {
			t.Fatal(err)
		}
		if got := body(t, resp); got != "hello from pkg.test:"+port+"\n" || calls.Load() != 1 {
			t.Errorf("GET %d: %q after %d resolutions", i, got, calls.Load())
		}
		calls.Store(0)
		c, _, cresp := connectRaw(t, addr, "pkg.test:"+port)
		if cresp.StatusCode != 200 || calls.Load() != 1 {
			t.Errorf("CONNECT %d: %s after %d resolutions", i, cresp.Status, calls.Load())
		}
		c.Close()
	}
	recs, _ := p.Records()
	for _, r := range recs {
		if !strings.HasPrefix(r.Addr, "127.0.0.1:") {
			t.Errorf("dialled %+v", r)
		}
	}
}

// TestForwardBodies: a forwarded request's body reaches the server whole, chunked or not, and
// the record counts both bodies; a keep-alive client's requests are each recorded.
func TestForwardBodies(t *testing.T) {
	srv := httpServer(t, hello())
	p, addr := newProxy(t, Config{Allow: []string{"pkg.test"}, Resolver: mapResolver(map[string][]string{"pkg.test": {"127.0.0.1"}})})
	tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: addr})}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	u := "http://pkg.test:" + portOf(t, srv.Listener.Addr().String()) + "/up"
	const size = 1<<20 + 3
	for _, chunked := range []bool{false, true} {
		var r io.Reader = strings.NewReader(strings.Repeat("z", size))
		if chunked {
			r = io.MultiReader(r) // no length known: sent chunked
		}
		resp, err := client.Post(u, "application/octet-stream", r)
		if err != nil {
			t.Fatal(err)
		}
		if got := body(t, resp); got != fmt.Sprintf("posted %d bytes\n", size) {
			t.Errorf("chunked %v: %q", chunked, got)
		}
	}
	// The client has the whole answer a moment before the proxy's handler records its end.
	waitFor(t, "both records ended", func() bool {
		recs, _ := p.Records()
		return len(recs) == 2 && !recs[0].End.IsZero() && !recs[1].End.IsZero()
	})
	recs, _ := p.Records()
	for _, r := range recs {
		if !strings.HasPrefix(r.Addr, "127.0.0.1:") || r.BytesUp != size || r.BytesDown != int64(len(fmt.Sprintf("posted %d bytes\n", size))) || r.End.IsZero() || r.Error != "" {
			t.Errorf("%+v", r)
		}
	}
}

// TestServeSeveral: one proxy on two listeners; the Serve whose context ends ends its own
// tunnels only, and every connection slot is given back.
func TestServeSeveral(t *testing.T) {
	port := eofServer(t)
	p, err := New(Config{Allow: []string{"eof.test"}, MaxConns: 4, Resolver: mapResolver(map[string][]string{"eof.test": {"127.0.0.1"}})})
	if err != nil {
		t.Fatal(err)
	}
	addr2 := startProxy(t, p)
	l1, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- p.Serve(ctx, l1) }()
	c1, _, resp := connectRaw(t, l1.Addr().String(), "eof.test:"+strconv.Itoa(port))
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	c2, _, resp := connectRaw(t, addr2, "eof.test:"+strconv.Itoa(port))
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	cancel()
	if err := <-served; !errors.Is(err, context.Canceled) {
		t.Errorf("Serve: %v", err)
	}
	if _, err := io.Copy(io.Discard, c1); err != nil && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("tunnel of the ended Serve: %v", err)
	}
	// The other tunnel still works.
	io.WriteString(c2, "abc")
	c2.(*net.TCPConn).CloseWrite()
	if got, err := io.ReadAll(c2); err != nil || string(got) != "read 3 bytes" {
		t.Errorf("tunnel of the other Serve: %q %v", got, err)
	}
	c2.Close()
	// The remaining Serve holds one slot while it waits in Accept for its next client.
	waitFor(t, "every slot given back", func() bool { return len(p.sem) == 1 })
}

// failingListener's Accept fails for good.
type failingListener struct{ net.Listener }

var errBroken = errors.New("listener broken")

func (failingListener) Accept() (net.Conn, error) { return nil, errBroken }

// TestServeAcceptError: an Accept error that is not temporary ends Serve with that error.
func TestServeAcceptError(t *testing.T) {
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Serve(context.Background(), failingListener{l}); !errors.Is(err, errBroken) {
		t.Errorf("Serve: %v", err)
	}
	if len(p.sem) != 0 {
		t.Errorf("%d slots held", len(p.sem))
	}
}

// TestDialTriesAddresses: a name's addresses are tried in turn until one answers, at most
// maxDialAddrs of them.
func TestDialTriesAddresses(t *testing.T) {
	srv := httpServer(t, hello())
	// 127.0.0.2 to 127.0.0.4 refuse (nothing listens there on the server's port), 127.0.0.1
	// answers: fourth in the list, it is reached; fifth, it is not tried.
	srvPort := portOf(t, srv.Listener.Addr().String())
	_, addr := newProxy(t, Config{
		Allow: []string{"four.test", "five.test"},
		Resolver: mapResolver(map[string][]string{
			"four.test": {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.1"},
			"five.test": {"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.1"},
		}),
	})
	c, _, resp := connectRaw(t, addr, "four.test:"+srvPort)
	if resp.StatusCode != 200 {
		t.Fatalf("four.test: %s", resp.Status)
	}
	if got := getOver(t, c, "four.test"); got != "hello from four.test\n" {
		t.Errorf("four.test: %q", got)
	}
	_, _, resp = connectRaw(t, addr, "five.test:"+srvPort)
	if got := body(t, resp); resp.StatusCode != 502 || strings.Count(got, "dial tcp ") != maxDialAddrs || strings.Contains(got, "127.0.0.1") {
		t.Errorf("five.test: %s %q", resp.Status, got)
	}
}

// TestIPv6: an IPv6 literal allowed by an IP pattern is reached over CONNECT and SOCKS5
// (address type 4, and a reply with an IPv6 bound address), as is a name resolving to ::1
// named exactly; without the pattern, the literal is refused.
func TestIPv6(t *testing.T) {
	l, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	srv := &http.Server{Handler: hello()}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	defer func() {
		srv.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Error(err)
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	ps := strconv.Itoa(port)
	p, addr := newProxy(t, Config{Allow: []string{"[::1]:" + ps, "v6.test"}, Resolver: mapResolver(map[string][]string{"v6.test": {"::1"}})})
	c, _, resp := connectRaw(t, addr, "[::1]:"+ps)
	if resp.StatusCode != 200 {
		t.Fatalf("CONNECT [::1]: %s", resp.Status)
	}
	if got := getOver(t, c, "v6"); got != "hello from v6\n" {
		t.Errorf("CONNECT [::1]: %q", got)
	}
	for _, host := range []string{"::1", "v6.test"} {
		c, code := socksDial(t, addr, host, port)
		if code != 0 {
			t.Fatalf("socks5 %s: reply %d", host, code)
		}
		if got := getOver(t, c, "v6"); got != "hello from v6\n" {
			t.Errorf("socks5 %s: %q", host, got)
		}
	}
	if _, code := socksDial(t, addr, "::1", port+1); code != socksNotAllowed {
		t.Errorf("socks5 [::1] on a port not allowed: reply %d", code)
	}
	recs, _ := p.Records()
	if len(recs) != 4 || recs[0].Host != "::1" || !strings.HasPrefix(recs[0].Addr, "[::1]:") {
		t.Errorf("records %+v", recs)
	}
}
