package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"time"
)

// ServeHTTP serves an HTTP client's request: CONNECT opens a tunnel, a request with an
// absolute http:// URI is forwarded.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		s.connect(w, r)
		return
	}
	s.forward(w, r)
}

// admit checks the destination t of an HTTP request made at start, records it, and answers a
// refusal (403) or a failed resolution (502) itself; ok says the request goes on, with its plan
// and its record's entry.
func (s *server) admit(w http.ResponseWriter, r *http.Request, t target, via string, start time.Time) (pl plan, e *entry, ok bool) {
	pl = s.p.check(r.Context(), t)
	rec := Record{Host: t.host, Port: t.port, Verdict: VerdictAllowed, Reason: pl.reason, Via: via, Start: start}
	if pl.refused {
		rec.Verdict = VerdictRefused
		rec.Reason = s.p.refusal(pl.reason)
		s.p.log.finish(s.p.log.add(rec), "", nil)
		s.answer(w, r, http.StatusForbidden, pl.reason)
		return pl, nil, false
	}
	e = s.p.log.add(rec)
	if pl.failed {
		s.p.log.finish(e, "", errors.New(pl.reason))
		s.answer(w, r, http.StatusBadGateway, pl.reason)
		return pl, nil, false
	}
	return pl, e, true
}

// connect serves a CONNECT request: the check, the dial, then the tunnel.
func (s *server) connect(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	t, err := parseHostPort(r.Host, 0)
	if err != nil {
		s.answer(w, r, http.StatusBadRequest, "bad CONNECT target: "+err.Error())
		return
	}
	pl, e, ok := s.admit(w, r, t, "connect", start)
	if !ok {
		return
	}
	dc, err := s.p.dial(r.Context(), pl)
	if err != nil {
		s.p.log.finish(e, "", err)
		s.answer(w, r, http.StatusBadGateway, err.Error())
		return
	}
	dest := &trackedConn{Conn: dc, set: s.conns}
	if !s.conns.add(dest) {
		_ = dest.Close() // never served: only its socket to release
		s.p.log.finish(e, "", ErrClosed)
		s.answer(w, r, http.StatusServiceUnavailable, "the proxy is closing")
		return
	}
	defer dest.Close()
	s.p.log.setAddr(e, dc.RemoteAddr().String())
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		s.p.log.finish(e, "", err)
		s.answer(w, r, http.StatusInternalServerError, "cannot take over the connection: "+err.Error())
		return
	}
	defer c.Close()
	if err := c.SetDeadline(time.Time{}); err != nil {
		s.p.log.finish(e, "", err)
		return
	}
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		s.p.log.finish(e, "", err)
		return
	}
	// Bytes the client sent after its request head (a TLS ClientHello, say) are in brw.
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n) // n bytes are buffered: Peek cannot fail
		if _, err := dc.Write(b); err != nil {
			s.p.log.finish(e, "", err)
			return
		}
		e.addUp(int64(n))
	}
	s.p.log.finish(e, "", relay(unwrap(c), dc, e.addUp, e.addDown))
}

// unwrap returns the socket under a client connection, for relay to splice from, once the
// bytes read to tell its protocol have been consumed.
func unwrap(c net.Conn) net.Conn {
	if tc, ok := c.(*trackedConn); ok && len(tc.first) == 0 {
		return tc.Conn
	}
	return c
}

// hopHeaders are the hop-by-hop headers (RFC 9110 7.6.1), never forwarded.
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// removeHopHeaders deletes the hop-by-hop headers, and those the Connection header names.
func removeHopHeaders(h http.Header) {
	for _, v := range h.Values("Connection") {
		for f := range strings.SplitSeq(v, ",") {
			if f = strings.TrimSpace(f); f != "" {
				h.Del(f)
			}
		}
	}
	for _, k := range hopHeaders {
		h.Del(k)
	}
}

// forward serves a plain HTTP request with an absolute http:// URI through the transport.
func (s *server) forward(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	if !r.URL.IsAbs() || r.URL.Host == "" {
		s.answer(w, r, http.StatusBadRequest, "this is a proxy: a request needs an absolute http:// URI")
		return
	}
	if r.URL.Scheme != "http" {
		s.answer(w, r, http.StatusBadRequest,
			fmt.Sprintf("only http:// URIs are forwarded (use CONNECT for %s://)", sanitize(quoteHost(r.URL.Scheme))))
		return
	}
	t, err := parseHostPort(r.URL.Host, 80)
	if err != nil {
		s.answer(w, r, http.StatusBadRequest, "bad request target: "+err.Error())
		return
	}
	pl, e, ok := s.admit(w, r, t, "http", start)
	if !ok {
		return
	}
	ctx := context.WithValue(r.Context(), planKey{}, pl)
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) { s.p.log.setAddr(e, info.Conn.RemoteAddr().String()) },
	})
	out := r.Clone(ctx)
	out.RequestURI = ""
	out.Host = "" // the Host header is the URI's host, the one checked
	out.Close = false
	removeHopHeaders(out.Header)
	if r.Body != nil && r.Body != http.NoBody {
		out.Body = &countingReader{r: r.Body, count: e.addUp}
	}
	resp, err := s.p.transport.RoundTrip(out)
	if err != nil {
		if re := (*refusalError)(nil); errors.As(err, &re) {
			s.p.log.finish(e, "", err)
			s.answer(w, r, http.StatusForbidden, re.reason)
			return
		}
		s.p.log.finish(e, "", err)
		s.answer(w, r, http.StatusBadGateway, fmt.Sprintf("%s: %v", t, err))
		return
	}
	defer resp.Body.Close()
	removeHopHeaders(resp.Header)
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	err = copyFlushing(w, resp.Body, e.addDown)
	s.p.log.finish(e, "", err)
	if err != nil {
		// The response is cut short: the client must see the connection end, not a complete
		// but truncated body.
		panic(http.ErrAbortHandler)
	}
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r     io.ReadCloser
	count func(int64)
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.count(int64(n))
	return n, err
}

func (c *countingReader) Close() error { return c.r.Close() }

// copyFlushing copies a response body to the client, flushing each read so that a stream
// (server-sent events, a long poll) is not held back.
func copyFlushing(w http.ResponseWriter, body io.Reader, count func(int64)) error {
	rc := http.NewResponseController(w)
	buf := make([]byte, 32<<10)
	for {
		n, rerr := body.Read(buf)
		if n > 0 {
			if _, err := w.Write(buf[:n]); err != nil {
				return err
			}
			count(int64(n))
			if err := rc.Flush(); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}

// answer gives an HTTP client an error whose status line and body carry the one-line reason
// (clients that show only the status line, such as Python's for a failed CONNECT, show it
// too), then closes the connection.
func (s *server) answer(w http.ResponseWriter, r *http.Request, status int, reason string) {
	line := s.p.refusal(reason)
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		w.Header().Set("Connection", "close")
		http.Error(w, line, status)
		return
	}
	defer c.Close()
	// Without a deadline (a connection already broken) the writes below fail at once.
	_ = c.SetDeadline(time.Now().Add(s.p.headTimeout))
	body := line + "\n"
	_, err = fmt.Fprintf(brw, "HTTP/1.1 %03d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"+
		"Content-Length: %d\r\nConnection: close\r\n\r\n%s", status, line, len(body), body)
	if err == nil {
		err = brw.Flush()
	}
	if err != nil {
		return // the client is gone
	}
	// Closing with unread request bytes would reset the connection and could lose the answer:
	// end the writing side and read what remains, boundedly.
	if closeWrite(c) == nil {
		_, _ = io.Copy(io.Discard, io.LimitReader(bufio.NewReader(c), 256<<10)) // only to drain
	}
}
