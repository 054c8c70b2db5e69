package shell

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/subkit/subkit/subprocess"
)

// read follows the terminal's output until it ends or Close stops it.
func (s *Session) read() {
	defer close(s.readerDone)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.readerStop:
			cancel()
		case <-ctx.Done():
		}
	}()
	for {
		if s.catchUp() {
			return
		}
		s.rmu.Lock()
		off := s.off
		s.rmu.Unlock()
		// Only a wait: what it reads is read again by catchUp, under the reader's lock.
		if _, err := s.term.WaitOutput(ctx, subprocess.Stdout, off, 1); err != nil {
			if ctx.Err() == nil {
				s.log.Warn("wait for terminal output", "err", err)
			}
			s.catchUp()
			return
		}
	}
}

// catchUp feeds the scanner whatever the terminal holds now; it reports whether the output
// has ended.
func (s *Session) catchUp() bool {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	for {
		d, err := s.term.ReadOutput(subprocess.Stdout, s.off, readChunk)
		if err != nil {
			s.log.Warn("read terminal", "err", err)
			s.endOutput()
			return true
		}
		if d.Dropped > 0 {
			s.mu.Lock()
			s.lost += d.Dropped
			s.mu.Unlock()
		}
		if len(d.Data) > 0 {
			s.sc.feed(d.Data)
		}
		if d.Next != s.off {
			s.outAt = time.Now()
		}
		s.off = d.Next
		if d.Done {
			s.endOutput()
			return true
		}
		if len(d.Data) == 0 {
			return false
		}
	}
}

// endOutput is called with rmu held once the terminal's output has ended.
func (s *Session) endOutput() {
	s.sc.end()
	s.mu.Lock()
	if !s.ended {
		s.ended = true
		s.notify()
	}
	s.mu.Unlock()
}

func (s *Session) flushLine() {
	s.rmu.Lock()
	s.sc.flush()
	s.rmu.Unlock()
}

// sessionScreen is the scanner's screenSink: a terminal emulator while a program holds the
// alternate screen. Its methods run with rmu held.
type sessionScreen struct{ s *Session }

func (x sessionScreen) on(seq []byte) {
	s := x.s
	if s.scr != nil {
		s.log.Warn("close the screen emulator", "err", s.scr.close())
	}
	s.scr = newScreen(s.cfg.Cols, s.cfg.Rows, &s.writers, func(p []byte) {
		if _, err := s.term.Write(p); err != nil {
			s.log.Debug("answer the program's terminal query", "err", err)
		}
	})
	s.scr.write(seq)
	s.lastScr = ""
}

func (x sessionScreen) write(p []byte) {
	if x.s.scr != nil {
		x.s.scr.write(p)
	}
}

func (x sessionScreen) off([]byte) {
	s := x.s
	if s.scr == nil {
		return
	}
	s.lastScr = s.scr.text()
	if err := s.scr.close(); err != nil {
		s.log.Warn("close the screen emulator", "err", err)
	}
	s.scr = nil
}

// screenText is the screen for a Step: the one a program holds now, else the one the last
// program left since the previous Step, else "".
func (s *Session) screenText() string {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	out := s.lastScr
	if s.scr != nil {
		out = s.scr.text()
	}
	s.lastScr = ""
	return out
}

// emit and marker are the scanner's outputs; they run with rmu held.
func (s *Session) emit(p []byte) {
	s.mu.Lock()
	s.tr.write(p)
	s.mu.Unlock()
}

func (s *Session) marker(m marker) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.cwdOK {
		s.cwd = m.cwd
	}
	s.errexit = strings.Contains(m.flags, "e")
	if !s.ready {
		s.ready = true
		s.inst = m.inst
		s.tr.skip() // the setup's own output is no one's
		s.notify()
		return
	}
	s.flags += m.flags
	if strings.Contains(m.flags, "X") {
		if instPid(m.inst) != s.term.Pid() {
			// A nested shell exits: the marker of the shell it returns to ends the command.
			s.notify()
			return
		}
		// The session's shell is exiting (its EXIT trap said so): report it now, not once
		// the terminal has drained, which a background job holding it delays.
		s.exiting, s.exitStatus = true, m.status
	}
	switch {
	case s.waiting && m.inst != s.waitInst:
		// Another bash is at its prompt: the command replaced the shell (exec bash), started
		// a nested one, or ended a nested one and the outer shell prints its marker (with
		// the status of the nested shell). Whichever, the command in progress is over.
		s.waiting = false
		s.doneAt, s.status = time.Now(), m.status
		if m.seq == 0 && strings.Contains(m.flags, "N") {
			s.status = 0 // a new shell's first prompt: its status is its startup's
		}
		s.flags += "I"
	case s.waiting && m.seq == s.waitSeq:
		s.waiting = false
		s.doneAt, s.status = time.Now(), m.status
	}
	s.inst = m.inst
	s.notify()
}

// instPid is the pid in a marker's instance ("PID.RANDOM"), or 0.
func instPid(inst string) int {
	p, _, _ := strings.Cut(inst, ".")
	n, err := strconv.Atoi(p)
	if err != nil {
		return 0
	}
	return n
}

// notify wakes the waiters; called with mu held.
func (s *Session) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}
