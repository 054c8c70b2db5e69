package shell

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"time"

	"github.com/subkit/subkit/internal/utf8bridge"
)

// InputWait says who waits for input at the terminal, and how the terminal will take what is
// typed, for a Step in StateWaitingInput.
type InputWait struct {
	// Pid and Comm name the process blocked reading the terminal (the shell itself for its
	// read builtin).
	Pid  int
	Comm string
	// ModesKnown says LineMode and EchoOff were read from the terminal; when false both are
	// false and say nothing.
	ModesKnown bool
	// LineMode: the terminal is in canonical mode (ICANON): what is typed reaches the program
	// when the line ends (a "\n"). False: every key is read as it comes (a REPL with line
	// editing, a full-screen program).
	LineMode bool
	// EchoOff: line mode with echo off, as at a password prompt: what is typed is not shown.
	EchoOff bool
	// Prompt is the last line of the output so far as Render shows it (at most 256 bytes,
	// the end kept), usually the prompt's text ("Continue? [Y/n] ", ">>> "); "" when the
	// output ends with a newline.
	Prompt string
}

// Describe is the state in a few words: "waiting for input", with " (echo off)" at a
// password prompt.
func (w *InputWait) Describe() string {
	if w != nil && w.EchoOff {
		return "waiting for input (echo off)"
	}
	return "waiting for input"
}

// probe is one look at the terminal's foreground process group.
type probe struct {
	// blocked: every live member is asleep and at least one is blocked reading the terminal.
	blocked bool
	// weak: the evidence is the kernel's wait channel only (the syscall could not be read),
	// so the session waits longer before it believes it.
	weak bool
	// sig changes whenever a member ran between two probes (its syscall or its count of
	// context switches differs): two probes with the same sig saw the group blocked all along.
	sig  string
	wait InputWait // who reads, and the terminal's modes
}

// errNoProbe: this platform cannot tell that a program waits for terminal input.
var errNoProbe = errors.New("no input probe on this platform")

// inputWatch decides when the foreground program waits for input: its output has been quiet
// for the settle, and two probes, at the start and at the end of that quiet, found the group
// blocked reading the terminal with nothing run in between. It is used only by the call that
// holds the session's turn; it lasts across calls, so a Poll after a waiting Step confirms at
// once.
type inputWatch struct {
	settle  time.Duration
	off     int64     // the terminal's output offset when last looked at
	quiet   time.Time // since when the output has been quiet (and nothing was typed)
	cand    *probe    // a blocked probe within this quiet, waiting for its confirmation
	retry   time.Duration
	noProbe bool // probes are not possible on this platform: the watch is off
	// typed is the group's signature just before input it will read was typed, until a
	// probe shows that the group ran since: until then it has not read that input, however
	// blocked it looks (on a loaded machine a reader may not run for a while).
	typed string
}

// maxRetry bounds the back-off between probes of a group that does not read the terminal.
const maxRetry = time.Second

// reset starts a new quiet period: output arrived or input was typed.
func (w *inputWatch) reset(now time.Time, off int64) {
	w.off, w.quiet, w.cand, w.retry = off, now, nil, 0
}

// typing takes the group's signature before input is typed, when the input wakes a reader
// of the terminal: any byte when the terminal is not in line mode, a line's end (or Ctrl-D,
// Ctrl-C) when it is.
func (w *inputWatch) typing(ctx context.Context, input []byte, inspect func(context.Context) (probe, error)) {
	w.typed = ""
	if w.noProbe {
		return
	}
	p, err := inspect(ctx)
	if err != nil {
		if errors.Is(err, errNoProbe) {
			w.noProbe = true
		}
		return
	}
	if p.wait.ModesKnown && p.wait.LineMode && !bytes.ContainsAny(input, "\n\r\x04\x03") {
		return // a part of a line: the reader sleeps on
	}
	w.typed = p.sig
}

// need is how long a probe's evidence must have been quiet.
func (w *inputWatch) need(p *probe) time.Duration {
	if p != nil && p.weak {
		return 4 * w.settle
	}
	return w.settle
}

// look is one step of the watch at now, with the terminal's output at off, last grown at
// outAt: it probes when the output has been quiet long enough and reports a confirmed wait,
// or when to look again.
func (w *inputWatch) look(ctx context.Context, now time.Time, off int64, outAt time.Time,
	inspect func(context.Context) (probe, error)) (*probe, time.Duration) {
	if off != w.off {
		at := now
		if outAt.After(w.quiet) && outAt.Before(now) {
			at = outAt
		}
		w.reset(at, off)
	}
	quiet := now.Sub(w.quiet)
	first := w.settle / 2
	if quiet < first {
		return nil, first - quiet
	}
	p, err := inspect(ctx)
	if err != nil {
		if errors.Is(err, errNoProbe) {
			w.noProbe = true
			return nil, 0
		}
		p = probe{}
	}
	if !p.blocked {
		w.cand = nil
		w.retry = min(max(2*w.retry, first), maxRetry)
		return nil, w.retry
	}
	w.retry = 0
	if w.typed != "" {
		if p.sig == w.typed {
			w.cand = nil // nothing of the group ran since the input was typed: it is unread
			return nil, first / 2
		}
		w.typed = ""
	}
	if w.cand != nil && w.cand.sig == p.sig && quiet >= w.need(&p) {
		return &p, 0
	}
	if w.cand == nil || w.cand.sig != p.sig {
		w.cand = &p
	}
	return nil, max(w.need(&p)-quiet, first/2)
}

// lastLine is the prompt of InputWait: the last line of rendered output, its end kept.
func lastLine(rendered string) string {
	i := strings.LastIndexByte(rendered, '\n')
	line := rendered[i+1:]
	const maxPrompt = 256
	if len(line) > maxPrompt {
		line = string(utf8bridge.TrimStart([]byte(line[len(line)-maxPrompt:])))
	}
	return line
}

// inspectForeground probes the terminal's foreground group.
func (s *Session) inspectForeground(ctx context.Context) (probe, error) {
	fg, err := s.term.Foreground(ctx)
	if err != nil {
		return probe{}, err
	}
	return inspectInput(fg)
}
