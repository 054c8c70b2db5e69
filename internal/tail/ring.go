package tail

// Ring holds at most Limit bytes: the newest ones of everything written. It counts every byte
// written, so a reader can address the stream by absolute offset and learn what was dropped.
// A Ring is not safe for concurrent use; callers hold their own lock.
type Ring struct {
	limit int
	buf   []byte // len(buf) <= limit; once len(buf) == limit the ring is full and circular
	w     int    // when full: index of the oldest byte, which is also the next write position
	total int64
}

// New returns a ring that keeps the last limit bytes. Memory grows with use, never past limit.
func New(limit int) *Ring {
	if limit < 0 {
		limit = 0
	}
	return &Ring{limit: limit}
}

// Limit is the most bytes the ring keeps.
func (r *Ring) Limit() int { return r.limit }

// Total is the number of bytes ever written.
func (r *Ring) Total() int64 { return r.total }

// Start is the stream offset of the oldest byte still held.
func (r *Ring) Start() int64 { return r.total - int64(len(r.buf)) }

// Len is the number of bytes held.
func (r *Ring) Len() int { return len(r.buf) }

// Write appends p to the stream, dropping the oldest bytes past the limit. It never fails.
func (r *Ring) Write(p []byte) (int, error) {
	n := len(p)
	r.total += int64(n)
	if r.limit == 0 || n == 0 {
		return n, nil
	}
	if n >= r.limit {
		r.grow(r.limit)
		r.buf = append(r.buf[:0], p[n-r.limit:]...)
		r.w = 0
		return n, nil
	}
	if len(r.buf) < r.limit {
		room := r.limit - len(r.buf)
		if len(p) <= room {
			r.grow(len(r.buf) + len(p))
			r.buf = append(r.buf, p...)
			return n, nil
		}
		r.grow(r.limit)
		r.buf = append(r.buf, p[:room]...)
		p = p[room:]
		r.w = 0
	}
	for len(p) > 0 {
		c := copy(r.buf[r.w:], p)
		p = p[c:]
		r.w = (r.w + c) % r.limit
	}
	return n, nil
}

// grow makes room for need bytes without letting append overshoot the limit.
func (r *Ring) grow(need int) {
	if need <= cap(r.buf) {
		return
	}
	c := max(need, 2*cap(r.buf), 512)
	c = min(c, r.limit)
	nb := make([]byte, len(r.buf), c)
	copy(nb, r.buf)
	r.buf = nb
}

// ReadAt copies up to max bytes (all when max <= 0) starting at stream offset from, or at
// Start() when from is older than what the ring holds. It returns the bytes and the offset of
// the first one. A from at or past Total yields no bytes.
func (r *Ring) ReadAt(from int64, max int) ([]byte, int64) {
	start := r.Start()
	if from < start {
		from = start
	}
	if from >= r.total {
		return nil, from
	}
	n := int(r.total - from)
	if max > 0 && n > max {
		n = max
	}
	out := make([]byte, n)
	r.copyFrom(out, int(from-start))
	return out, from
}

// Bytes returns a copy of everything the ring holds, oldest first.
func (r *Ring) Bytes() []byte {
	out := make([]byte, len(r.buf))
	r.copyFrom(out, 0)
	return out
}

// copyFrom fills dst with held bytes starting at logical index i (0 = oldest held).
func (r *Ring) copyFrom(dst []byte, i int) {
	if len(r.buf) < r.limit || r.w == 0 { // not yet circular, or oldest byte at index 0
		copy(dst, r.buf[i:])
		return
	}
	p := (r.w + i) % r.limit
	c := copy(dst, r.buf[p:])
	copy(dst[c:], r.buf)
}
