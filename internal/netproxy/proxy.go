package netproxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// ErrClosed is returned by Serve once Close has been called.
var ErrClosed = errors.New("netproxy: proxy closed")

// Defaults of Config's zero values.
const (
	DefaultMaxRecords  = 1000
	DefaultMaxConns    = 256
	DefaultHeadTimeout = 30 * time.Second
	DefaultDialTimeout = 30 * time.Second
	// MaxHeaderBytes bounds an HTTP request head (the request line and the headers).
	MaxHeaderBytes = 64 << 10
	// idleTimeout ends a client's keep-alive HTTP connection idle between requests (never a
	// tunnel).
	idleTimeout = 2 * time.Minute
)

// Config says what a Proxy lets through.
type Config struct {
	// Allow lists the host patterns a client may reach. A pattern is one of:
	//   - an exact host name, "proxy.golang.org";
	//   - a wildcard of subdomains, "*.npmjs.org": any name below npmjs.org at any depth, not
	//     npmjs.org itself;
	//   - an IP literal or a CIDR, "10.0.0.5", "10.0.0.0/8", "::1", "[::1]", "fc00::/7";
	// each optionally followed by ":PORT" or ":PORT1,PORT2" (an IPv6 literal or CIDR then in
	// brackets, "[::1]:443"); without a port, any port. Names are compared case-insensitively
	// with one trailing dot ignored; IDNA names (Unicode or punycode) are compared as given.
	// A name pattern never matches a client's IP literal: a bare IP is allowed only by an IP or
	// CIDR pattern. An empty Allow allows nothing.
	//
	// An address that leads back into the host or its networks (loopback, link-local, private,
	// shared, unspecified, multicast, broadcast, reserved, the host's own interface addresses,
	// and the IPv4-mapped and embedded forms of those) is reached only when the pattern that
	// allowed the host names it exactly: an exact name, an IP literal or a CIDR, never a
	// wildcard.
	Allow []string
	// Deny lists host patterns, in Allow's syntax, that are refused even when Allow matches.
	// An IP or CIDR pattern of Deny also refuses the addresses a name resolves to.
	Deny []string
	// Resolver resolves a host name (normalized: lower case, no trailing dot) to its
	// addresses. nil means net.DefaultResolver.LookupNetIP with network "ip". The proxy dials
	// only addresses it got from Resolver and checked.
	Resolver func(ctx context.Context, host string) ([]netip.Addr, error)
	// MaxRecords bounds the record log of Proxy.Records: once full, the oldest record is
	// dropped and counted. It also bounds the distinct host:port pairs Proxy.Refused lists.
	// 0 means DefaultMaxRecords.
	MaxRecords int
	// MaxConns bounds the client connections served at once; the listener is not accepted
	// from while that many are open, so further clients wait in its backlog. 0 means
	// DefaultMaxConns.
	MaxConns int
	// HeadTimeout bounds the time a client has, from its connection or the start of a request,
	// to send a whole request head (an HTTP request line and headers, or SOCKS5's greeting and
	// request). A client that is slower is disconnected. It never applies to a tunnel, a request
	// body or a response. 0 means DefaultHeadTimeout.
	HeadTimeout time.Duration
	// DialTimeout bounds the resolution of a name, and each dial of a destination address (of
	// which at most 4 are tried in turn). 0 means DefaultDialTimeout.
	DialTimeout time.Duration
	// Name begins every refusal a client is given ("Name: example.com:443 is not in the
	// network allow-list (add --allow example.com)"), so the user can tell who refused. ""
	// means "netproxy".
	Name string
}

// Proxy is an allow-list HTTP and SOCKS5 proxy. Its methods are safe for concurrent use.
type Proxy struct {
	pol         *policy
	log         *recordLog
	resolver    func(ctx context.Context, host string) ([]netip.Addr, error)
	localAddrs  func() ([]netip.Addr, error)
	classify    func(a netip.Addr, own []netip.Addr) string // specialKind; tests replace it
	sem         chan struct{}
	headTimeout time.Duration
	dialTimeout time.Duration
	name        string
	transport   *http.Transport
	errorLog    *log.Logger

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc

	mu     sync.Mutex
	closed bool
	serves sync.WaitGroup
}

// New checks cfg and returns a Proxy. A bad pattern or value is an error matching ErrInvalid
// (a *PatternError for each bad pattern, joined, or a *ConfigError).
func New(cfg Config) (*Proxy, error) {
	pol, err := newPolicy(cfg.Allow, cfg.Deny)
	if err != nil {
		return nil, err
	}
	for _, f := range []struct {
		name string
		bad  bool
	}{
		{"MaxRecords", cfg.MaxRecords < 0},
		{"MaxConns", cfg.MaxConns < 0},
		{"HeadTimeout", cfg.HeadTimeout < 0},
		{"DialTimeout", cfg.DialTimeout < 0},
	} {
		if f.bad {
			return nil, &ConfigError{Field: f.name, Problem: "negative"}
		}
	}
	p := &Proxy{
		pol:         pol,
		log:         newLog(orDefault(cfg.MaxRecords, DefaultMaxRecords)),
		resolver:    cfg.Resolver,
		localAddrs:  interfaceAddrs,
		classify:    specialKind,
		sem:         make(chan struct{}, orDefault(cfg.MaxConns, DefaultMaxConns)),
		headTimeout: orDefault(cfg.HeadTimeout, DefaultHeadTimeout),
		dialTimeout: orDefault(cfg.DialTimeout, DefaultDialTimeout),
		name:        cfg.Name,
		errorLog:    log.New(io.Discard, "", 0),
	}
	if p.name == "" {
		p.name = "netproxy"
	}
	if p.resolver == nil {
		p.resolver = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.transport = &http.Transport{
		Proxy:                  nil, // never a proxy of the environment
		DialContext:            p.transportDial,
		DisableCompression:     true,
		MaxIdleConns:           64,
		MaxIdleConnsPerHost:    8,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 1 << 20,
		ForceAttemptHTTP2:      false,
	}
	return p, nil
}

func orDefault[T int | time.Duration](v, def T) T {
	if v == 0 {
		return def
	}
	return v
}

// interfaceAddrs lists the host's own interface addresses, unmapped.
func interfaceAddrs() ([]netip.Addr, error) {
	as, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("list this host's addresses: %w", err)
	}
	out := make([]netip.Addr, 0, len(as))
	for _, a := range as {
		var ip net.IP
		switch a := a.(type) {
		case *net.IPNet:
			ip = a.IP
		case *net.IPAddr:
			ip = a.IP
		}
		if addr, ok := netip.AddrFromSlice(ip); ok {
			out = append(out, addr.Unmap())
		}
	}
	return out, nil
}

// Records returns the record log, oldest first, and how many older records were dropped to
// keep it within MaxRecords. A request that names no destination (a malformed head, a
// request that is not for a proxy) is answered but not recorded.
func (p *Proxy) Records() (recs []Record, dropped int) { return p.log.records() }

// Refused returns one Record per refused host:port, in the order first refused, with Count
// the number of refusals and Reason the latest one's.
func (p *Proxy) Refused() []Record { return p.log.refusals() }

// Close stops every Serve, ends every connection (tunnels included) and waits until they
// have ended. Calling it again does nothing and returns nil.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	p.cancel()
	p.serves.Wait()
	p.transport.CloseIdleConnections()
	return nil
}

// Serve serves clients of l until ctx ends or Close is called, then ends the connections it
// accepted and returns once they have ended. It closes l before returning. It returns
// ErrClosed after Close, ctx's error when ctx ended, or the error of l.Accept that stopped it
// (a temporary one, such as running out of file descriptors, is retried after a pause).
// Serve may be called on several listeners at once; they share MaxConns.
func (p *Proxy) Serve(ctx context.Context, l net.Listener) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return errors.Join(ErrClosed, l.Close())
	}
	p.serves.Add(1)
	p.mu.Unlock()
	defer p.serves.Done()

	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(p.ctx, cancel)
	defer stop()

	s := &server{p: p, ctx: sctx, conns: newConnSet(), httpL: newChanListener(l.Addr())}
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: p.headTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          p.errorLog,
		BaseContext:       func(net.Listener) context.Context { return sctx },
	}
	s.wg.Add(2)
	go func() {
		defer s.wg.Done()
		// It returns once httpL is closed, with net.ErrClosed; its connections are ended by
		// s.conns.closeAll.
		_ = hs.Serve(s.httpL)
	}()
	var closeErr error
	go func() {
		defer s.wg.Done()
		<-sctx.Done()
		closeErr = l.Close()
		s.httpL.Close()
		s.conns.closeAll()
	}()

	var acceptErr error
	backoff := time.Duration(0)
accept:
	for {
		// A slot of MaxConns, given back by the connection's Close.
		select {
		case p.sem <- struct{}{}:
		case <-sctx.Done():
			break accept
		}
		if sctx.Err() != nil {
			<-p.sem
			break
		}
		c, err := l.Accept()
		if err != nil {
			<-p.sem
			if sctx.Err() != nil {
				break
			}
			if te, ok := err.(interface{ Temporary() bool }); !ok || !te.Temporary() {
				acceptErr = err
				break
			}
			// A transient failure (out of file descriptors, say): wait and accept again.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-sctx.Done():
				t.Stop()
			}
			continue
		}
		backoff = 0
		s.wg.Add(1)
		tc := &trackedConn{Conn: c, set: s.conns, done: func() { <-p.sem; s.wg.Done() }}
		if !s.conns.add(tc) {
			_ = tc.Close() // closing down: the connection is not served
			break
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveConn(tc)
		}()
	}
	cancel()
	s.wg.Wait()
	switch {
	case acceptErr != nil:
		return acceptErr
	case p.ctx.Err() != nil:
		return ErrClosed
	case closeErr != nil && !errors.Is(closeErr, net.ErrClosed):
		return errors.Join(ctx.Err(), closeErr)
	}
	return ctx.Err()
}

// server is one Serve call's state.
type server struct {
	p     *Proxy
	ctx   context.Context // ends with the Serve call
	conns *connSet        // client and destination connections, ended with ctx
	httpL *chanListener   // the connections of HTTP clients, for the http.Server
	// wg counts the Serve call's goroutines and its client connections until their owner
	// closes them.
	wg sync.WaitGroup
}

// serveConn tells SOCKS5 from HTTP by the first byte and serves the connection.
func (s *server) serveConn(c *trackedConn) {
	if err := c.SetReadDeadline(time.Now().Add(s.p.headTimeout)); err != nil {
		_ = c.Close() // a connection that cannot take a deadline is already broken
		return
	}
	var b [1]byte
	if _, err := io.ReadFull(c, b[:]); err != nil {
		_ = c.Close() // a client that sent nothing
		return
	}
	if b[0] == socksVersion {
		defer c.Close()
		s.serveSOCKS(c)
		return
	}
	c.first = []byte{b[0]}
	select {
	case s.httpL.ch <- c:
	case <-s.httpL.done:
		_ = c.Close() // the Serve call is ending: the connection is not served
	}
}

// plan is the outcome of checking a target: the addresses to dial, or why not.
type plan struct {
	t      target
	addrs  []netip.Addr
	reason string // "allowed by PATTERN", or the refusal or failure
	// refused: the policy refused the target; failed: it was allowed but could not be
	// resolved to an address.
	refused, failed bool
}

// refusalError is a refusal from the transport's dial (a plain HTTP request whose check was
// not carried to the dial).
type refusalError struct{ reason string }

func (e *refusalError) Error() string { return e.reason }

// check decides a target: the policy, then (for a name) its resolution, keeping the addresses
// that may be dialled.
func (p *Proxy) check(ctx context.Context, t target) plan {
	d := p.pol.check(t)
	if !d.allowed {
		return plan{t: t, refused: true, reason: d.reason}
	}
	addrs := []netip.Addr{t.addr}
	if !t.addr.IsValid() {
		rctx, cancel := context.WithTimeout(ctx, p.dialTimeout)
		as, err := p.resolver(rctx, t.host)
		cancel()
		if err != nil {
			return plan{t: t, failed: true, reason: fmt.Sprintf("%s: cannot resolve %s: %v", t, t.host, err)}
		}
		if len(as) == 0 {
			return plan{t: t, failed: true, reason: fmt.Sprintf("%s: %s has no address", t, t.host)}
		}
		addrs = as
	}
	var own []netip.Addr
	if !d.match.exact() {
		var err error
		if own, err = p.localAddrs(); err != nil {
			return plan{t: t, refused: true, reason: fmt.Sprintf("%s is refused: %v", t, err)}
		}
	}
	var keep []netip.Addr
	var why string
	for _, a := range addrs {
		a = a.WithZone("").Unmap()
		if !a.IsValid() || keep != nil && containsAddr(keep, a) {
			continue
		}
		if dp := p.pol.denyAddr(a, t.port); dp != nil {
			if why == "" {
				why = fmt.Sprintf("%s resolves to %s, denied by the network deny-list pattern %s", t, a, dp.text)
			}
			continue
		}
		if !d.match.exact() {
			if kind := p.classify(a, own); kind != "" {
				if why == "" {
					why = fmt.Sprintf("%s resolves to %s, %s, which only a pattern naming the host exactly allows (add --allow %s)",
						t, a, describeKind(kind), t.hostPattern())
				}
				continue
			}
		}
		keep = append(keep, a)
	}
	if len(keep) == 0 {
		if why == "" {
			why = fmt.Sprintf("%s has no address", t)
		}
		return plan{t: t, refused: true, reason: why}
	}
	return plan{t: t, addrs: keep, reason: d.reason}
}

func containsAddr(as []netip.Addr, a netip.Addr) bool {
	for _, b := range as {
		if a == b {
			return true
		}
	}
	return false
}

// maxDialAddrs bounds the addresses of a name tried in turn, each for up to DialTimeout, so
// that a name with many unreachable addresses cannot hold a connection for long.
const maxDialAddrs = 4

// dial connects to the first of the plan's addresses (at most maxDialAddrs) that answers.
func (p *Proxy) dial(ctx context.Context, pl plan) (net.Conn, error) {
	d := net.Dialer{Timeout: p.dialTimeout}
	var errs []error
	for _, a := range pl.addrs[:min(len(pl.addrs), maxDialAddrs)] {
		c, err := d.DialContext(ctx, "tcp", netip.AddrPortFrom(a, uint16(pl.t.port)).String())
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, &dialError{t: pl.t, errs: errs}
}

// dialError is the failure of every dial of a target.
type dialError struct {
	t    target
	errs []error
}

func (e *dialError) Error() string {
	return fmt.Sprintf("%s: cannot connect: %v", e.t, errors.Join(e.errs...))
}

func (e *dialError) Unwrap() []error { return e.errs }

// socksCode is the SOCKS5 reply of a dial failure.
func (e *dialError) socksCode() byte {
	switch {
	case errors.Is(e, errConnRefused):
		return socksConnRefused
	case errors.Is(e, errNetUnreach):
		return socksNetUnreachable
	}
	return socksHostUnreachable
}

// planKey carries a plain HTTP request's plan to the transport's dial.
type planKey struct{}

// transportDial is the forwarding transport's DialContext: it dials the addresses the
// request's plan checked, or checks the target itself when the plan is not for it.
func (p *Proxy) transportDial(ctx context.Context, network, addr string) (net.Conn, error) {
	// The transport may go on dialling for a request that has ended; Close ends that too.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(p.ctx, cancel)
	defer stop()
	t, err := parseHostPort(addr, 0)
	if err != nil {
		return nil, err
	}
	pl, ok := ctx.Value(planKey{}).(plan)
	if !ok || pl.t != t {
		pl = p.check(ctx, t)
	}
	if pl.refused || pl.failed {
		return nil, &refusalError{reason: pl.reason}
	}
	return p.dial(ctx, pl)
}

// refusal is the line a client is given: the proxy's name and the reason.
func (p *Proxy) refusal(reason string) string {
	return p.name + ": " + sanitize(reason)
}

// sanitize keeps a reason printable ASCII, so it fits a status line.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c < ' ' || c > '~' {
			b[i] = '?'
		}
	}
	return string(b)
}
