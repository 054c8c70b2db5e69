package shell

import (
	"errors"
	"io"
	"strings"
	"sync"

	"github.com/charmbracelet/x/vt"
)

// Full-screen programs. A program that switches the terminal to its alternate screen (vim,
// less, top, htop, watch: smcup, ESC [ ? 1049 h, and the older ?1047 and ?47) draws a screen
// with cursor movement rather than writing lines. From that switch until it switches back
// (or the shell's next prompt marker, if it never does), the scanner sends the bytes to a
// terminal emulator (charmbracelet/x/vt) instead of the transcript, and a Step carries the
// emulator's screen as text, rows of it with trailing blanks trimmed: what a person would
// see. The emulator answers the program's queries (device attributes, cursor position) as a
// terminal would, through the pty.

// altEnter and altLeave are the sequences that switch to the alternate screen and back.
var (
	altEnter = [][]byte{[]byte("\x1b[?1049h"), []byte("\x1b[?1047h"), []byte("\x1b[?47h")}
	altLeave = [][]byte{[]byte("\x1b[?1049l"), []byte("\x1b[?1047l"), []byte("\x1b[?47l")}
)

// maxReplies bounds the emulator's answers waiting to be typed into the terminal; beyond it
// they are dropped (a program that floods the terminal with queries and never reads its
// input gets no more answers).
const maxReplies = 64

// screen is a terminal emulator for one stretch of alternate-screen output. Write and Text
// are called with the session's reader lock held; the answers go to the terminal through
// reply from goroutines of their own, so a program that does not read its input never blocks
// the reader.
type screen struct {
	emu     *vt.Emulator
	replies chan []byte
	wg      *sync.WaitGroup // the owner's: its goroutines end after close, once reply returns
	once    sync.Once
}

func newScreen(cols, rows int, wg *sync.WaitGroup, reply func([]byte)) *screen {
	sc := &screen{emu: vt.NewEmulator(cols, rows), replies: make(chan []byte, maxReplies), wg: wg}
	sc.wg.Add(2)
	go func() { // the emulator's answers, off its pipe at once
		defer sc.wg.Done()
		defer close(sc.replies)
		buf := make([]byte, 4096)
		for {
			n, err := sc.emu.Read(buf)
			if n > 0 {
				select {
				case sc.replies <- append([]byte(nil), buf[:n]...):
				default:
				}
			}
			if err != nil {
				return
			}
		}
	}()
	go func() { // typed into the terminal, as a terminal would answer
		defer sc.wg.Done()
		for p := range sc.replies {
			reply(p)
		}
	}()
	return sc
}

func (sc *screen) write(p []byte) {
	_, _ = sc.emu.Write(p) // the emulator never fails a write; what it cannot parse it drops
}

// text is the screen as a person would read it: its rows, trailing blanks trimmed, trailing
// empty rows left out.
func (sc *screen) text() string {
	lines := strings.Split(sc.emu.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, "\n")
}

// close ends the emulator's answers; its goroutines end once those still queued are typed
// (the owner waits for them on its WaitGroup after the terminal has gone, when reply returns
// at once). It closes the answers' pipe itself rather than calling Emulator.Close, which
// would race with the Read in progress (v0.1.0 reads and sets its closed flag unguarded);
// later writes to the emulator drop their answers. It is safe to call more than once.
func (sc *screen) close() error {
	var err error
	sc.once.Do(func() {
		pw, ok := sc.emu.InputPipe().(*io.PipeWriter)
		if !ok {
			err = errors.New("the terminal emulator's answers are not an io.Pipe")
			return
		}
		err = pw.CloseWithError(io.EOF)
	})
	return err
}
