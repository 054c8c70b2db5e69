package darwin

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Columns is the ps -o format Snapshot and Lookup request: the fields of a
// Record in the order Parse expects them.
const Columns = "pid=,ppid=,pgid=,tpgid=,tdev=,state=,lstart=,comm="

// PsPath is the ps binary Snapshot runs (absolute, so PATH cannot divert it).
const PsPath = "/bin/ps"

// Env returns the complete environment ps runs with: the C locale and UTC fix
// the lstart format and time zone so Parse reads it deterministically.
func Env() []string { return []string{"LC_ALL=C", "TZ=UTC0"} }

// Args returns the ps arguments (without argv[0]) for a snapshot of every
// process, or, when pids are given, of just those processes.
func Args(pids ...int) []string {
	if len(pids) == 0 {
		return []string{"-axww", "-o", Columns}
	}
	b := make([]byte, 0, 8*len(pids))
	for i, pid := range pids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, int64(pid), 10)
	}
	return []string{"-ww", "-o", Columns, "-p", string(b)}
}

// LstartLayout is the time layout of ps's lstart column under LC_ALL=C, after
// Parse has collapsed the day's padding space.
const LstartLayout = "Mon Jan 2 15:04:05 2006"

// Record is one process from a ps snapshot.
type Record struct {
	Pid   int
	PPid  int
	Pgid  int
	Sid   int // session id; Parse sets -1, Snapshot fills it with getsid(2)
	Tpgid int // foreground process group of the controlling terminal, 0 when none
	// Tty is the controlling terminal as a Darwin dev_t (major<<24 | minor),
	// 0 when there is none.
	Tty   uint64
	State string // ps state letters, e.g. "Ss+"
	Start uint64 // lstart as Unix seconds
	Comm  string
}

// Zombie reports whether the process has exited and waits to be reaped.
func (r Record) Zombie() bool { return len(r.State) > 0 && r.State[0] == 'Z' }

// ErrMalformed is wrapped by every error Parse returns.
var ErrMalformed = errors.New("malformed ps output")

// ParseError reports a line of ps output that Parse could not read.
type ParseError struct {
	Line int    // 1-based line number
	Text string // the line (cut to 200 bytes)
	Err  error  // what was wrong; wraps ErrMalformed
}

// Error names the line and says what was wrong with it.
func (e *ParseError) Error() string {
	return fmt.Sprintf("procinspect/darwin: ps output line %d %q: %v", e.Line, e.Text, e.Err)
}

// Unwrap returns Err, so errors.Is(err, ErrMalformed) holds.
func (e *ParseError) Unwrap() error { return e.Err }

// nFixed is the number of whitespace-separated tokens before comm: pid, ppid,
// pgid, tpgid, tdev, state and the five tokens of lstart.
const nFixed = 11

// Parse reads the output of ps run with Args: one process per line, in
// Columns order. Empty lines are skipped, and so is a header line (one whose
// first token is "PID") when it is the first non-empty line. Trailing spaces and a carriage return are trimmed
// from comm. Parse never panics; a line it cannot read gives a *ParseError
// naming the line.
func Parse(out []byte) ([]Record, error) {
	var recs []Record
	lineNo, first := 0, true
	for len(out) > 0 {
		var line []byte
		if i := bytes.IndexByte(out, '\n'); i >= 0 {
			line, out = out[:i], out[i+1:]
		} else {
			line, out = out, nil
		}
		lineNo++
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		rec, err := parseLine(line)
		wasFirst := first
		first = false
		if err != nil {
			if wasFirst && errors.Is(err, errHeader) {
				continue
			}
			text := line
			if len(text) > 200 {
				text = text[:200]
			}
			return nil, &ParseError{Line: lineNo, Text: string(text), Err: err}
		}
		recs = append(recs, rec)
	}
	return recs, nil
}

// errHeader marks a header line: skipped as the first non-empty line, malformed elsewhere.
var errHeader = fmt.Errorf("%w: a header line where a process was expected", ErrMalformed)

func parseLine(line []byte) (Record, error) {
	if h := bytes.TrimLeft(line, " \t"); bytes.HasPrefix(h, []byte("PID")) && (len(h) == 3 || h[3] == ' ' || h[3] == '\t') {
		return Record{}, errHeader
	}
	var tok [nFixed][]byte
	rest := line
	for i := range tok {
		rest = bytes.TrimLeft(rest, " \t")
		if len(rest) == 0 {
			return Record{}, fmt.Errorf("%w: %d fields, want at least %d (pid ppid pgid tpgid tdev state lstart[5])", ErrMalformed, i, nFixed)
		}
		j := bytes.IndexAny(rest, " \t")
		if j < 0 {
			j = len(rest)
		}
		tok[i], rest = rest[:j], rest[j:]
	}
	rec := Record{Sid: -1}
	ints := [...]struct {
		name string
		dst  *int
	}{{"pid", &rec.Pid}, {"ppid", &rec.PPid}, {"pgid", &rec.Pgid}, {"tpgid", &rec.Tpgid}}
	for i, f := range ints {
		v, err := strconv.Atoi(string(tok[i]))
		if err != nil || (i < 3 && v < 0) {
			return Record{}, fmt.Errorf("%w: %s %q is not a valid id", ErrMalformed, f.name, tok[i])
		}
		*f.dst = v
	}
	tty, err := parseTdev(tok[4])
	if err != nil {
		return Record{}, err
	}
	rec.Tty = tty
	rec.State = string(tok[5])

	var ls [64]byte
	b := ls[:0]
	for i, t := range tok[6:nFixed] {
		if i > 0 {
			b = append(b, ' ')
		}
		b = append(b, t...)
	}
	start, err := time.ParseInLocation(LstartLayout, string(b), time.UTC)
	if err != nil {
		return Record{}, fmt.Errorf("%w: lstart %q: %v", ErrMalformed, b, err)
	}
	if start.Unix() < 0 {
		return Record{}, fmt.Errorf("%w: lstart %q is before 1970", ErrMalformed, b)
	}
	rec.Start = uint64(start.Unix())

	comm := bytes.TrimLeft(rest, " \t")
	comm = bytes.TrimRight(comm, " \t\r")
	rec.Comm = string(comm)
	return rec, nil
}

// parseTdev reads ps's tdev column: "??" (or "-") for no terminal, otherwise
// "major/minor", encoded as Darwin's dev_t: major in the top 8 bits of 32,
// minor in the low 24.
func parseTdev(b []byte) (uint64, error) {
	if string(b) == "??" || string(b) == "-" {
		return 0, nil
	}
	i := bytes.IndexByte(b, '/')
	if i < 0 {
		return 0, fmt.Errorf("%w: tdev %q is neither \"??\" nor major/minor", ErrMalformed, b)
	}
	major, err1 := strconv.ParseUint(string(b[:i]), 10, 8)
	minor, err2 := strconv.ParseUint(string(b[i+1:]), 10, 24)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%w: tdev %q: major must fit 8 bits and minor 24", ErrMalformed, b)
	}
	return major<<24 | minor, nil
}
