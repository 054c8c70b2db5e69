package netproxy

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"time"
)

// SOCKS5 (RFC 1928) constants.
const (
	socksVersion   = 0x05
	socksNoAuth    = 0x00
	socksNoMethods = 0xff
	socksConnect   = 0x01

	socksATYPv4     = 0x01
	socksATYPDomain = 0x03
	socksATYPv6     = 0x04

	socksOK              = 0x00
	socksFailure         = 0x01
	socksNotAllowed      = 0x02
	socksNetUnreachable  = 0x03
	socksHostUnreachable = 0x04
	socksConnRefused     = 0x05
	socksBadCommand      = 0x07
	socksBadAddrType     = 0x08
)

// socksError is a malformed or unsupported SOCKS5 head; reply is the code to answer with, or
// 0 when the client is to get no reply (a greeting without the no-authentication method gets
// its own answer, a stream that is not SOCKS5 none).
type socksError struct {
	reply byte
	msg   string
}

func (e *socksError) Error() string { return "socks5: " + e.msg }

// socksRequest is a parsed SOCKS5 request.
type socksRequest struct {
	host string // a domain name as sent, or ""
	addr netip.Addr
	port int
}

// readSOCKSGreeting reads the greeting after its version byte (already read): the methods
// count and the methods. It reports whether the no-authentication method is offered.
func readSOCKSGreeting(r io.Reader) (noAuth bool, err error) {
	var n [1]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return false, err
	}
	methods := make([]byte, n[0])
	if _, err := io.ReadFull(r, methods); err != nil {
		return false, err
	}
	for _, m := range methods {
		if m == socksNoAuth {
			return true, nil
		}
	}
	return false, nil
}

// readSOCKSRequest reads a request: VER CMD RSV ATYP DST.ADDR DST.PORT.
func readSOCKSRequest(r io.Reader) (socksRequest, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return socksRequest{}, err
	}
	if h[0] != socksVersion {
		return socksRequest{}, &socksError{reply: socksFailure, msg: fmt.Sprintf("request version %d", h[0])}
	}
	var req socksRequest
	switch h[3] {
	case socksATYPv4:
		var a [4]byte
		if _, err := io.ReadFull(r, a[:]); err != nil {
			return socksRequest{}, err
		}
		req.addr = netip.AddrFrom4(a)
	case socksATYPv6:
		var a [16]byte
		if _, err := io.ReadFull(r, a[:]); err != nil {
			return socksRequest{}, err
		}
		req.addr = netip.AddrFrom16(a)
	case socksATYPDomain:
		var n [1]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return socksRequest{}, err
		}
		name := make([]byte, n[0])
		if _, err := io.ReadFull(r, name); err != nil {
			return socksRequest{}, err
		}
		req.host = string(name)
	default:
		return socksRequest{}, &socksError{reply: socksBadAddrType, msg: fmt.Sprintf("address type %d", h[3])}
	}
	var p [2]byte
	if _, err := io.ReadFull(r, p[:]); err != nil {
		return socksRequest{}, err
	}
	req.port = int(binary.BigEndian.Uint16(p[:]))
	if h[1] != socksConnect {
		return socksRequest{}, &socksError{reply: socksBadCommand, msg: fmt.Sprintf("command %d (only CONNECT is served)", h[1])}
	}
	return req, nil
}

// target of a request, normalized.
func (r socksRequest) target() (target, error) {
	if r.addr.IsValid() {
		return parseTarget(r.addr.String(), r.port)
	}
	return parseTarget(r.host, r.port)
}

// socksReply is a reply with the bound address (zeros for a failure).
func socksReply(code byte, bound net.Addr) []byte {
	b := []byte{socksVersion, code, 0}
	var ap netip.AddrPort
	if ta, ok := bound.(*net.TCPAddr); ok {
		ap = ta.AddrPort()
	}
	a := ap.Addr().Unmap()
	switch {
	case a.Is4():
		v := a.As4()
		b = append(b, socksATYPv4)
		b = append(b, v[:]...)
	case a.Is6():
		v := a.As16()
		b = append(b, socksATYPv6)
		b = append(b, v[:]...)
	default:
		b = append(b, socksATYPv4, 0, 0, 0, 0)
	}
	return binary.BigEndian.AppendUint16(b, ap.Port())
}

// lastWord writes a failure reply to a client the proxy is about to drop. Its error is not
// kept: a client that cannot be written to is gone, which is where the proxy leaves it anyway.
func lastWord(c net.Conn, b []byte) {
	_, _ = c.Write(b)
}

// serveSOCKS serves a SOCKS5 client whose version byte has been read. The caller closes c.
func (s *server) serveSOCKS(c *trackedConn) {
	start := time.Now()
	br := bufio.NewReaderSize(c, 512)
	noAuth, err := readSOCKSGreeting(br)
	if err != nil {
		return
	}
	if !noAuth {
		lastWord(c, []byte{socksVersion, socksNoMethods})
		return
	}
	if _, err := c.Write([]byte{socksVersion, socksNoAuth}); err != nil {
		return
	}
	req, err := readSOCKSRequest(br)
	if err != nil {
		if se := (*socksError)(nil); errors.As(err, &se) && se.reply != 0 {
			lastWord(c, socksReply(se.reply, nil))
		}
		return
	}
	t, err := req.target()
	if err != nil {
		lastWord(c, socksReply(socksNotAllowed, nil))
		return
	}
	pl := s.p.check(s.ctx, t)
	rec := Record{Host: t.host, Port: t.port, Verdict: VerdictAllowed, Reason: pl.reason, Via: "socks5", Start: start}
	if pl.refused {
		rec.Verdict = VerdictRefused
		rec.Reason = s.p.refusal(pl.reason)
		s.p.log.finish(s.p.log.add(rec), "", nil)
		lastWord(c, socksReply(socksNotAllowed, nil))
		return
	}
	e := s.p.log.add(rec)
	if pl.failed {
		s.p.log.finish(e, "", errors.New(pl.reason))
		lastWord(c, socksReply(socksHostUnreachable, nil))
		return
	}
	dc, err := s.p.dial(s.ctx, pl)
	if err != nil {
		s.p.log.finish(e, "", err)
		code := byte(socksHostUnreachable)
		if de := (*dialError)(nil); errors.As(err, &de) {
			code = de.socksCode()
		}
		lastWord(c, socksReply(code, nil))
		return
	}
	dest := &trackedConn{Conn: dc, set: s.conns}
	if !s.conns.add(dest) {
		_ = dest.Close() // never served: only its socket to release
		s.p.log.finish(e, "", ErrClosed)
		return
	}
	defer dest.Close()
	s.p.log.setAddr(e, dc.RemoteAddr().String())
	if _, err := c.Write(socksReply(socksOK, dc.LocalAddr())); err != nil {
		s.p.log.finish(e, "", err)
		return
	}
	if err := c.SetDeadline(time.Time{}); err != nil {
		s.p.log.finish(e, "", err)
		return
	}
	if n := br.Buffered(); n > 0 {
		b, _ := br.Peek(n) // n bytes are buffered: Peek cannot fail
		if _, err := dc.Write(b); err != nil {
			s.p.log.finish(e, "", err)
			return
		}
		e.addUp(int64(n))
	}
	s.p.log.finish(e, "", relay(unwrap(c), dc, e.addUp, e.addDown))
}
