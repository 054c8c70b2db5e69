package linux

import (
	"bytes"
	"errors"
	"fmt"
	"math"
)

// Stat is the part of /proc/<pid>/stat that names a process and places it in
// the process tree. Field names follow proc(5); the numbers in the comments
// are the 1-based field positions documented there.
type Stat struct {
	Pid  int    // (1) process id
	Comm string // (2) command name, without the enclosing parentheses; may contain spaces and ')'
	// State is field (3): 'R' running, 'S' sleeping, 'D' disk sleep,
	// 'Z' zombie, 'T' stopped, 't' tracing stop, 'X' dead, 'I' idle, ...
	State     byte
	PPid      int    // (4) parent process id (0 for pid 1 and kernel threads' root)
	Pgrp      int    // (5) process group id
	Session   int    // (6) session id
	TtyNr     int    // (7) controlling terminal device number, 0 when none
	Tpgid     int    // (8) foreground process group of the controlling terminal, -1 when none
	StartTime uint64 // (22) start time in clock ticks since boot
}

// Zombie reports whether the process has exited and waits to be reaped
// (state 'Z'), or is dead and being torn down (state 'X').
func (s Stat) Zombie() bool { return s.State == 'Z' || s.State == 'X' }

// ErrMalformed is wrapped by every error ParseStat returns.
var ErrMalformed = errors.New("malformed /proc/<pid>/stat")

// Field positions (1-based, as in proc(5)) that ParseStat reads after comm.
const (
	fieldState     = 3
	fieldPPid      = 4
	fieldPgrp      = 5
	fieldSession   = 6
	fieldTtyNr     = 7
	fieldTpgid     = 8
	fieldStartTime = 22
)

// splitStat splits a stat line into the pid, the comm (between the first '(' and the last ')')
// and the fields after comm.
func splitStat(b []byte) (pid int, comm, rest []byte, err error) {
	open := bytes.IndexByte(b, '(')
	if open < 0 {
		return 0, nil, nil, malformed("no '(' opening comm", b)
	}
	closing := bytes.LastIndexByte(b, ')')
	if closing < open {
		return 0, nil, nil, malformed("no ')' closing comm", b)
	}
	pid, ok := parseInt(bytes.TrimRight(b[:open], " "))
	if !ok || pid <= 0 {
		return 0, nil, nil, malformed("field 1 (pid) is not a positive integer", b[:open])
	}
	return pid, b[open+1 : closing], b[closing+1:], nil
}

// ParseStat parses the contents of /proc/<pid>/stat.
//
// The command name is taken between the first '(' and the last ')', so a
// comm holding spaces, parentheses or even ") (" parses correctly: the
// fields after comm are all numeric or a single state letter, so the last
// ')' always closes comm. Fields after starttime are ignored, so newer
// kernels that append fields parse unchanged.
//
// ParseStat never panics; malformed input gives an error wrapping
// ErrMalformed that says which field was wrong. It allocates only the Comm
// string (and the error, when there is one).
func ParseStat(b []byte) (Stat, error) {
	var st Stat
	pid, comm, rest, err := splitStat(b)
	if err != nil {
		return st, err
	}
	st.Pid = pid
	st.Comm = string(comm)

	field := 2 // comm; the next field is 3
	for field < fieldStartTime {
		// Skip separators. The kernel writes single spaces and a final
		// newline; runs are tolerated.
		i := 0
		for i < len(rest) && (rest[i] == ' ' || rest[i] == '\n') {
			i++
		}
		rest = rest[i:]
		if len(rest) == 0 {
			return st, malformed(fmt.Sprintf("has %d fields, want at least %d", field, fieldStartTime), b)
		}
		j := 0
		for j < len(rest) && rest[j] != ' ' && rest[j] != '\n' {
			j++
		}
		tok := rest[:j]
		rest = rest[j:]
		field++

		switch field {
		case fieldState:
			if len(tok) != 1 {
				return st, malformed("field 3 (state) is not one letter", tok)
			}
			st.State = tok[0]
		case fieldPPid, fieldPgrp, fieldSession, fieldTtyNr, fieldTpgid:
			v, ok := parseInt(tok)
			if !ok {
				return st, malformed(fmt.Sprintf("field %d (%s) is not an integer", field, fieldName(field)), tok)
			}
			switch field {
			case fieldPPid:
				st.PPid = v
			case fieldPgrp:
				st.Pgrp = v
			case fieldSession:
				st.Session = v
			case fieldTtyNr:
				st.TtyNr = v
			case fieldTpgid:
				st.Tpgid = v
			}
		case fieldStartTime:
			v, ok := parseUint(tok)
			if !ok {
				return st, malformed("field 22 (starttime) is not an unsigned integer", tok)
			}
			st.StartTime = v
		}
	}
	return st, nil
}

func fieldName(field int) string {
	switch field {
	case fieldPPid:
		return "ppid"
	case fieldPgrp:
		return "pgrp"
	case fieldSession:
		return "session"
	case fieldTtyNr:
		return "tty_nr"
	case fieldTpgid:
		return "tpgid"
	}
	return "?"
}

// maxExcerpt bounds how much of the offending input an error quotes.
const maxExcerpt = 64

func malformed(what string, excerpt []byte) error {
	if len(excerpt) > maxExcerpt {
		return fmt.Errorf("%w: %s: %q (cut)", ErrMalformed, what, excerpt[:maxExcerpt])
	}
	return fmt.Errorf("%w: %s: %q", ErrMalformed, what, excerpt)
}

// parseUint parses a non-empty run of ASCII digits, rejecting overflow.
func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (math.MaxUint64-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}

// parseInt parses an optionally '-'-signed decimal that fits in an int.
func parseInt(b []byte) (int, bool) {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg = true
		b = b[1:]
	}
	u, ok := parseUint(b)
	if !ok {
		return 0, false
	}
	if neg {
		if u > uint64(math.MaxInt)+1 {
			return 0, false
		}
		return int(-u), true // -u wraps to the two's complement of u; MinInt stays MinInt
	}
	if u > math.MaxInt {
		return 0, false
	}
	return int(u), true
}
