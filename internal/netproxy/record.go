package netproxy

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Verdicts of a Record.
const (
	VerdictAllowed = "allowed"
	VerdictRefused = "refused"
)

// Record is one connection (a CONNECT tunnel, a SOCKS5 connection) or one forwarded plain HTTP
// request, allowed or refused.
type Record struct {
	// Host is the destination as the client named it, normalized: a lower-case name without
	// a trailing dot, or an IP address (IPv6 without brackets).
	Host string
	// Port is the destination port.
	Port int
	// Verdict is VerdictAllowed or VerdictRefused.
	Verdict string
	// Reason says why: "allowed by PATTERN", or the one-line refusal the client was given.
	Reason string
	// Via is how the client asked: "connect" (an HTTP CONNECT tunnel), "http" (a plain HTTP
	// request forwarded) or "socks5".
	Via string
	// Addr is the address dialled (for a forwarded request, that of the connection it went
	// over), once known; "" before.
	Addr string
	// Error is why an allowed connection failed (resolution, dial, or the transfer), or "".
	Error string
	// BytesUp and BytesDown are the bytes carried from the client to the destination and back:
	// the tunnel's payload, or a forwarded request's and response's bodies. A Record taken
	// while the connection is open has the counts so far, except that the bytes down a
	// tunnel to a client on a Unix socket are counted when that direction ends (the copy is
	// done by splice(2) in one go).
	BytesUp, BytesDown int64
	// Start is when the proxy received the request.
	Start time.Time
	// End is when the connection ended; the zero value while it is open.
	End time.Time
	// Count is how many refusals of Host:Port the Record stands for (Proxy.Refused only; 0 in
	// Proxy.Records).
	Count int
}

// entry is a Record being written: the counters move while the connection is open.
type entry struct {
	rec      Record // guarded by log.mu, except the counters below
	up, down atomic.Int64
}

func (e *entry) addUp(n int64)   { e.up.Add(n) }
func (e *entry) addDown(n int64) { e.down.Add(n) }

// recordLog is the bounded record log and the refusal tally.
type recordLog struct {
	mu      sync.Mutex
	max     int
	ring    []*entry // oldest first once full: ring[head] is the oldest
	head    int
	dropped int
	// refused sums refusals by host:port, in the order first seen, at most max keys.
	refused      map[string]*Record
	refusedOrder []string
}

func newLog(max int) *recordLog {
	return &recordLog{max: max, refused: map[string]*Record{}}
}

// add appends a record and returns its entry, for the counters and finish.
func (l *recordLog) add(r Record) *entry {
	e := &entry{rec: r}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.ring) < l.max {
		l.ring = append(l.ring, e)
	} else {
		l.ring[l.head] = e
		l.head = (l.head + 1) % l.max
		l.dropped++
	}
	if r.Verdict == VerdictRefused {
		key := r.Host + "\x00" + strconv.Itoa(r.Port)
		if s, ok := l.refused[key]; ok {
			s.Count++
			s.Reason = r.Reason
		} else if len(l.refusedOrder) < l.max {
			s := r
			s.Count = 1
			l.refused[key] = &s
			l.refusedOrder = append(l.refusedOrder, key)
		}
	}
	return e
}

// finish sets the end of an entry, with the dialled address and the error if any.
func (l *recordLog) finish(e *entry, addr string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if addr != "" {
		e.rec.Addr = addr
	}
	if err != nil && e.rec.Error == "" {
		e.rec.Error = err.Error()
	}
	e.rec.End = time.Now()
}

// setAddr sets the dialled address of an open entry.
func (l *recordLog) setAddr(e *entry, addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e.rec.Addr = addr
}

func (l *recordLog) records() ([]Record, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Record, 0, len(l.ring))
	for i := range l.ring {
		e := l.ring[(l.head+i)%len(l.ring)]
		r := e.rec
		r.BytesUp, r.BytesDown = e.up.Load(), e.down.Load()
		out = append(out, r)
	}
	return out, l.dropped
}

func (l *recordLog) refusals() []Record {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]Record, 0, len(l.refusedOrder))
	for _, k := range l.refusedOrder {
		out = append(out, *l.refused[k])
	}
	return out
}
