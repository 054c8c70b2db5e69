package netproxy

import (
	"errors"
	"io"
	"net"
	"sync"
)

// trackedConn is a client or destination connection of a Serve call. Its owner (the code
// serving it, or the http.Server) closes it once; closeAll of its set only closes the socket
// under it, so that the owner, seeing its reads and writes fail, still closes it and done runs
// when the owner is through with it.
type trackedConn struct {
	net.Conn
	set   *connSet
	once  sync.Once
	done  func() // nil for a destination connection
	first []byte // bytes read to tell the protocol, returned by the next Reads
}

func (c *trackedConn) Read(b []byte) (int, error) {
	if len(c.first) > 0 {
		n := copy(b, c.first)
		c.first = c.first[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

// Close closes the connection and, the first time, releases its place in the set.
func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.set.remove(c)
		if c.done != nil {
			c.done()
		}
	})
	return err
}

// CloseWrite shuts down the writing side, when the connection has one.
func (c *trackedConn) CloseWrite() error { return closeWrite(c.Conn) }

func closeWrite(c net.Conn) error {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}

// connSet is the open connections of a Serve call.
type connSet struct {
	mu     sync.Mutex
	m      map[*trackedConn]struct{}
	closed bool
}

func newConnSet() *connSet { return &connSet{m: map[*trackedConn]struct{}{}} }

// add adds c, or reports false once closeAll has run.
func (s *connSet) add(c *trackedConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.m[c] = struct{}{}
	return true
}

func (s *connSet) remove(c *trackedConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, c)
}

// closeAll closes the socket of every connection, now and as they are added.
func (s *connSet) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for c := range s.m {
		_ = c.Conn.Close() // the owner's Close reports errors; this one only ends the I/O
	}
}

// chanListener hands the http.Server the connections that turned out to be HTTP.
type chanListener struct {
	addr net.Addr
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

// relayChunk is how much a copy moves between updates of the byte counts; the copy of each
// chunk can use splice(2) between sockets.
const relayChunk = 1 << 20

// relay copies both ways between a client and a destination until both directions have
// ended, half-closing each side as the other's stream ends; an error in either direction ends
// both. up and down count the bytes. It returns the first error other than the end of the
// streams, and closes neither connection.
func relay(client, dest net.Conn, up, down func(int64)) error {
	errc := make(chan error, 2)
	// stop ends both directions at once; the owners close the connections again and keep
	// those errors.
	stop := sync.OnceFunc(func() {
		_ = client.Close()
		_ = dest.Close()
	})
	pipe := func(dst, src net.Conn, count func(int64)) {
		err := copyCounted(dst, src, count)
		if err == nil {
			if cwErr := closeWrite(dst); cwErr != nil {
				stop() // no half-close: the other direction cannot be told, so end both
			}
		} else {
			stop()
		}
		errc <- err
	}
	go pipe(dest, client, up)
	go pipe(client, dest, down)
	err1, err2 := <-errc, <-errc
	for _, err := range []error{err1, err2} {
		if err != nil && !errors.Is(err, net.ErrClosed) {
			return err
		}
	}
	return nil
}

// copyCounted copies src to dst until src's end, counting as it goes.
func copyCounted(dst, src net.Conn, count func(int64)) error {
	if tc, ok := src.(*net.TCPConn); ok {
		if _, ok := dst.(*net.UnixConn); ok {
			// From a TCP socket to a Unix one, splice(2) is only done to the end of the
			// stream, so the count comes at the end.
			n, err := tc.WriteTo(dst)
			count(n)
			return err
		}
	}
	var buf []byte // for the pairs splice(2) does not serve
	if _, ok := dst.(*net.TCPConn); !ok {
		buf = make([]byte, 64<<10)
	}
	for {
		n, err := io.CopyBuffer(dst, io.LimitReader(src, relayChunk), buf)
		count(n)
		if err != nil {
			return err
		}
		if n < relayChunk {
			return nil
		}
	}
}
