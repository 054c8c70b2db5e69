package shell

import "bytes"

// lineMax bounds how much of one line the scanner holds back to decide whether it is the
// session's own (a line carrying the nonce); a longer line cannot be, and streams through.
const lineMax = 4 << 10

// scanner turns the raw terminal stream into transcript bytes and prompt markers. It removes
// the markers (those with the session's nonce; any other look-alike is ordinary output) and
// the lines that carry the nonce (bash echoing the session's own machinery). It keeps at most
// markerMax + lineMax bytes of state. It is not safe for concurrent use.
type scanner struct {
	nonce []byte
	head  []byte // markerPrefix + nonce + ";"
	carry []byte // an incomplete marker (or its start), waiting for more bytes
	line  []byte // the current line, held back while it might be one of the session's own
	long  bool   // the current line outgrew lineMax: it streams through to its end
	emit  func([]byte)
	mark  func(marker)
}

func newScanner(nonce string, emit func([]byte), mark func(marker)) *scanner {
	return &scanner{
		nonce: []byte(nonce), head: []byte(markerPrefix + nonce + ";"),
		emit: emit, mark: mark,
	}
}

// feed takes the next bytes of the stream.
func (s *scanner) feed(p []byte) {
	if len(s.carry) > 0 {
		p = append(s.carry, p...)
		s.carry = nil
	}
	prefix := []byte(markerPrefix)
	for len(p) > 0 {
		i := bytes.IndexByte(p, 0x1b)
		if i < 0 {
			s.text(p)
			return
		}
		s.text(p[:i])
		p = p[i:]
		if len(p) < len(prefix) {
			if bytes.HasPrefix(prefix, p) {
				s.carry = append([]byte(nil), p...)
				return
			}
			s.text(p[:1])
			p = p[1:]
			continue
		}
		if !bytes.HasPrefix(p, prefix) {
			s.text(p[:1])
			p = p[1:]
			continue
		}
		window := p[:min(len(p), markerMax)]
		j := bytes.IndexByte(window, 0x07)
		if j < 0 {
			if len(p) < markerMax {
				s.carry = append([]byte(nil), p...)
				return
			}
			s.text(p[:1]) // too long to be a marker
			p = p[1:]
			continue
		}
		seq := p[:j+1]
		p = p[j+1:]
		if bytes.HasPrefix(seq, s.head) {
			if m, ok := parseMarker(string(seq[len(s.head) : len(seq)-1])); ok {
				s.flush()
				s.mark(m)
				continue
			}
		}
		s.text(seq) // a look-alike without the nonce: ordinary output
	}
}

// text passes ordinary bytes on, holding back the current line until it is known not to be
// one of the session's own.
func (s *scanner) text(b []byte) {
	for len(b) > 0 {
		if len(s.line) == 0 && !s.long {
			// Fast path: whole lines with no nonce among them go out at once.
			if last := bytes.LastIndexByte(b, '\n'); last >= 0 && !bytes.Contains(b[:last+1], s.nonce) {
				s.emit(b[:last+1])
				b = b[last+1:]
				continue
			}
		}
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if !s.long && len(s.line)+len(b) > lineMax {
				if len(s.line) > 0 {
					s.emit(s.line)
					s.line = s.line[:0]
				}
				s.long = true
			}
			if s.long {
				s.emit(b)
				return
			}
			s.line = append(s.line, b...)
			return
		}
		seg := b[:i+1]
		b = b[i+1:]
		if s.long || len(s.line)+len(seg) > lineMax {
			if len(s.line) > 0 {
				s.emit(s.line)
				s.line = s.line[:0]
			}
			s.emit(seg)
			s.long = false
			continue
		}
		s.line = append(s.line, seg...)
		if !bytes.Contains(s.line, s.nonce) {
			s.emit(s.line)
		}
		s.line = s.line[:0]
	}
}

// flush lets out the line held back, unless it is one of the session's own; an incomplete
// marker stays held. It is called at a marker and whenever a Step is taken.
func (s *scanner) flush() {
	if len(s.line) > 0 && !bytes.Contains(s.line, s.nonce) {
		s.emit(s.line)
	}
	s.line = s.line[:0]
	s.long = false
}

// end flushes everything, an incomplete marker included (the stream has ended: it was text).
func (s *scanner) end() {
	carry := s.carry
	s.carry = nil
	if len(carry) > 0 {
		s.text(carry)
	}
	s.flush()
}
