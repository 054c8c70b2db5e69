package netproxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"testing"
	"time"
)

// FuzzSOCKSHead: the SOCKS5 greeting and request parsers never panic, and a parsed request
// gives a target or an error.
func FuzzSOCKSHead(f *testing.F) {
	f.Add([]byte{1, 0, 5, 1, 0, 3, 8, 'p', 'k', 'g', '.', 't', 'e', 's', 't', 0, 80})
	f.Add([]byte{1, 0, 5, 1, 0, 1, 127, 0, 0, 1, 1, 187})
	f.Add([]byte{1, 0, 5, 1, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 22})
	f.Add([]byte{2, 2, 0, 5, 2, 0, 9})
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		if _, err := readSOCKSGreeting(r); err != nil {
			return
		}
		req, err := readSOCKSRequest(r)
		if err != nil {
			var se *socksError
			if !errors.As(err, &se) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if tg, err := req.target(); err == nil && (tg.port != req.port || tg.String() == "") {
			t.Fatalf("target %+v of %+v", tg, req)
		}
	})
}

// FuzzPolicy: any pattern and any requested authority are parsed or refused without a
// panic; a valid pattern keeps its text.
func FuzzPolicy(f *testing.F) {
	f.Add("*.npmjs.org:443,80", "a.npmjs.org:443")
	f.Add("[::1]:22", "[::1]:22")
	f.Add("10.0.0.0/8", "10.1.2.3:80")
	f.Add("::ffff:10.0.0.0/104", "[::ffff:10.0.0.1]:1")
	f.Add("Example.COM.", "example.com.:65535")
	f.Fuzz(func(t *testing.T, pat, authority string) {
		p, err := parsePattern("allow", pat)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("%q: %v does not match ErrInvalid", pat, err)
			}
			return
		}
		if p.text != pat {
			t.Fatalf("text %q of %q", p.text, pat)
		}
		tg, err := parseHostPort(authority, 80)
		if err != nil {
			return
		}
		pol := &policy{allow: []*pattern{p}, deny: []*pattern{p}}
		if d := pol.check(tg); d.allowed {
			t.Fatalf("%q allowed %q though it is denied by the same pattern", pat, authority)
		}
		pol.deny = nil
		_ = pol.check(tg)
	})
}

// FuzzConn: whatever a client sends, the served proxy answers or drops it without a panic
// and ends the connection once the client has ended its side. No destination resolves, so
// nothing is dialled.
func FuzzConn(f *testing.F) {
	for _, s := range []string{
		"CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n",
		"GET http://a.test/x HTTP/1.1\r\nHost: a.test\r\nProxy-Connection: keep-alive\r\n\r\nGET http://b.test/ HTTP/1.0\r\n\r\n",
		"POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
		"CONNECT [::1]:22 HTTP/1.1\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
		"\x05\x01\x00\x05\x01\x00\x03\x06a.test\x01\xbb",
		"\x05\x02\x01\x02",
		"\x05\x01\x00\x05\x01\x00\x01\x7f\x00\x00\x01\x00\x50",
		"\x16\x03\x01\x00\x05hello",
	} {
		f.Add([]byte(s))
	}
	p, err := New(Config{
		Allow: []string{"*.test"},
		Resolver: func(ctx context.Context, host string) (addrs []netip.Addr, err error) {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		},
		HeadTimeout: 10 * time.Second,
	})
	if err != nil {
		f.Fatal(err)
	}
	addr := startProxy(f, p)
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		go func() {
			_, _ = c.Write(b)
			_ = c.(*net.TCPConn).CloseWrite()
		}()
		if err := c.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		_, err = io.Copy(io.Discard, c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("the proxy kept the connection open after the client's end: %q", b)
		}
	})
}
