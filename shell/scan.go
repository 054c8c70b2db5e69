package shell

import (
	"bytes"
	"strings"
)

// lineMax bounds how much of one line the scanner holds back to decide whether it is the
// session's own; a longer line cannot be, and streams through.
const lineMax = 4 << 10

// ownLines is what the session's own lines look like: the terminal's echo of the line the
// session types for each command (and set -v's copy of it), set -x's trace of its `builtin
// source FILE`, and set -v's echo of PROMPT_COMMAND. Only these are removed: a user's line
// that carries the nonce (declare -f, echo $PROMPT_COMMAND, env) is output like any other.
type ownLines struct {
	nonce   []byte
	path    []byte   // the command file: a line with neither it nor the nonce is never the session's
	typedAt []byte   // "{ __sk_N_a; } 2>/dev/null", the end of the typed line
	traces  [][]byte // "builtin source FILE" as set -x shows it, quoted or not
	pc      []byte   // the value of PROMPT_COMMAND
}

func newOwnLines(nonce, cmdPath, pc string) ownLines {
	return ownLines{
		nonce: []byte(nonce), path: []byte(cmdPath),
		typedAt: []byte("{ __sk_" + nonce + "_a; } 2>/dev/null"),
		traces:  [][]byte{[]byte(" builtin source " + cmdPath), []byte(" builtin source " + shellQuote(cmdPath))},
		pc:      []byte(pc),
	}
}

// suspect reports whether b may hold one of the session's lines.
func (o *ownLines) suspect(b []byte) bool {
	return bytes.Contains(b, o.nonce) || (len(o.path) > 0 && bytes.Contains(b, o.path))
}

// own reports whether the complete line (its newline included) is one of the session's.
func (o *ownLines) own(line []byte) bool {
	l := bytes.TrimRight(line, "\r\n")
	if bytes.HasSuffix(l, o.typedAt) {
		return true // the echo of the typed line, after whatever half line ^U erased or a line editor drew
	}
	for _, t := range o.traces {
		if bytes.HasSuffix(l, t) && bytes.HasPrefix(l, []byte("+")) {
			return true
		}
	}
	return false
}

// isPC reports whether the complete line is PROMPT_COMMAND's value, as set -v echoes it before
// the hook runs (or as a user's echo $PROMPT_COMMAND prints it: the marker that follows tells).
func (o *ownLines) isPC(line []byte) bool {
	return len(o.pc) > 0 && bytes.Equal(bytes.TrimRight(line, "\r\n"), o.pc)
}

// scanner turns the raw terminal stream into transcript bytes and prompt markers. It removes
// the markers (those with the session's nonce; any other look-alike is ordinary output) and
// the session's own lines (ownLines). It keeps at most markerMax + 2*lineMax bytes of state.
// It is not safe for concurrent use.
type scanner struct {
	own   ownLines
	head  []byte // markerPrefix + nonce + ";"
	carry []byte // an incomplete marker (or its start), waiting for more bytes
	line  []byte // the current line, held back while it might be one of the session's own
	long  bool   // the current line outgrew lineMax: it streams through to its end
	// pend is a complete line equal to PROMPT_COMMAND's value: set -v's echo when the marker
	// that follows says verbose is on, else output.
	pend []byte
	emit func([]byte)
	mark func(marker)
	// alt: a program holds the alternate screen; its bytes go to screen, not emit.
	alt    bool
	screen screenSink
}

// screenSink takes the alternate screen's bytes: on starts a screen (with the sequence that
// switched to it), write feeds it, off ends it (with the sequence that switched back, or nil
// when a prompt marker came first).
type screenSink interface {
	on(seq []byte)
	write(p []byte)
	off(seq []byte)
}

func newScanner(own ownLines, emit func([]byte), mark func(marker), screen screenSink) *scanner {
	return &scanner{
		own: own, head: []byte(markerPrefix + string(own.nonce) + ";"),
		emit: emit, mark: mark, screen: screen,
	}
}

// prefixOfAny reports whether p is a proper prefix of one of seqs.
func prefixOfAny(p []byte, seqs ...[][]byte) bool {
	for _, set := range seqs {
		for _, q := range set {
			if len(p) < len(q) && bytes.HasPrefix(q, p) {
				return true
			}
		}
	}
	return false
}

// startsWithAny returns the one of seqs that p starts with, or nil.
func startsWithAny(p []byte, seqs [][]byte) []byte {
	for _, q := range seqs {
		if bytes.HasPrefix(p, q) {
			return q
		}
	}
	return nil
}

// out passes ordinary bytes on: to the screen while a program holds it, else as text.
func (s *scanner) out(b []byte) {
	if len(b) == 0 {
		return
	}
	if s.alt {
		s.screen.write(b)
		return
	}
	s.text(b)
}

// feed takes the next bytes of the stream.
func (s *scanner) feed(p []byte) {
	if len(s.carry) > 0 {
		p = append(s.carry, p...)
		s.carry = nil
	}
	prefix := []byte(markerPrefix)
	markers := [][]byte{prefix}
	for len(p) > 0 {
		i := bytes.IndexByte(p, 0x1b)
		if i < 0 {
			s.out(p)
			return
		}
		s.out(p[:i])
		p = p[i:]
		if s.screen != nil {
			switches := altEnter
			if s.alt {
				switches = altLeave
			}
			if seq := startsWithAny(p, switches); seq != nil {
				if s.alt {
					s.screen.write(seq)
					s.alt = false
					s.screen.off(seq)
				} else {
					s.flushAt(true) // the line before the screen is output
					s.alt = true
					s.screen.on(seq)
				}
				p = p[len(seq):]
				continue
			}
			if prefixOfAny(p, switches, markers) {
				s.carry = append([]byte(nil), p...)
				return
			}
		}
		if len(p) < len(prefix) {
			if bytes.HasPrefix(prefix, p) {
				s.carry = append([]byte(nil), p...)
				return
			}
			s.out(p[:1])
			p = p[1:]
			continue
		}
		if !bytes.HasPrefix(p, prefix) {
			s.out(p[:1])
			p = p[1:]
			continue
		}
		window := p[:min(len(p), markerMax)]
		j := bytes.IndexByte(window, 0x07)
		// A marker holds no ESC (its directory is %q-quoted): another ESC before the BEL
		// means this was an unterminated look-alike, output, and a real marker may start
		// there.
		if k := bytes.IndexByte(window[1:], 0x1b); k >= 0 && (j < 0 || k+1 < j) {
			s.out(p[:k+1])
			p = p[k+1:]
			continue
		}
		if j < 0 {
			if len(p) < markerMax {
				s.carry = append([]byte(nil), p...)
				return
			}
			s.out(p[:1]) // too long to be a marker
			p = p[1:]
			continue
		}
		seq := p[:j+1]
		p = p[j+1:]
		if bytes.HasPrefix(seq, s.head) {
			if m, ok := parseMarker(string(seq[len(s.head) : len(seq)-1])); ok {
				if s.alt { // the shell is back at its prompt: the program that held the screen is gone
					s.alt = false
					s.screen.off(nil)
				}
				s.flushAt(true)
				if len(s.pend) > 0 && !strings.Contains(m.flags, "v") {
					s.emit(s.pend)
				}
				s.pend = s.pend[:0]
				s.mark(m)
				continue
			}
		}
		s.out(seq) // a look-alike without the nonce: ordinary output
	}
}

// text passes ordinary bytes on, holding back the current line until it is known not to be
// one of the session's own.
func (s *scanner) text(b []byte) {
	if len(b) > 0 && len(s.pend) > 0 {
		s.emit(s.pend) // more output came before a marker: it was output
		s.pend = s.pend[:0]
	}
	for len(b) > 0 {
		if len(s.line) == 0 && !s.long {
			// Fast path: whole lines that cannot be the session's go out at once.
			if last := bytes.LastIndexByte(b, '\n'); last >= 0 && !s.own.suspect(b[:last+1]) {
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
		s.complete()
	}
}

// complete decides on the held line, now ended by its newline.
func (s *scanner) complete() {
	switch {
	case s.own.own(s.line):
	case s.own.isPC(s.line):
		if len(s.pend) > 0 {
			s.emit(s.pend)
		}
		s.pend = append(s.pend[:0], s.line...)
	default:
		s.emit(s.line)
	}
	s.line = s.line[:0]
}

// flush lets out the held partial line, for a Step being taken: unless it may still become
// one of the session's lines (it carries the nonce or the command file), which waits for its
// end or the next marker. An incomplete marker and a pending PROMPT_COMMAND line stay held.
func (s *scanner) flush() { s.flushAt(false) }

// flushAt is flush; at a marker every partial line is output (the session's own lines end
// before their command runs).
func (s *scanner) flushAt(marker bool) {
	if len(s.line) > 0 && (marker || !s.own.suspect(s.line)) {
		s.emit(s.line)
		s.line = s.line[:0]
	}
	if marker {
		s.long = false
	}
}

// end flushes everything, an incomplete marker included (the stream has ended: it was text).
func (s *scanner) end() {
	carry := s.carry
	s.carry = nil
	if len(carry) > 0 {
		s.out(carry)
	}
	if s.alt {
		s.alt = false
		s.screen.off(nil)
	}
	if len(s.pend) > 0 {
		s.emit(s.pend)
		s.pend = s.pend[:0]
	}
	s.flushAt(true)
}
