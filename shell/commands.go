package shell

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/subkit/subkit/internal/done"
)

// Run sends command to the shell and waits until it finishes (StateCompleted), the shell
// ends (StateExited) or yield has passed (StateRunning: it goes on; Poll, Write or Interrupt
// it). Yield 0 means Config.Yield. The command runs as if typed at the prompt (it is sourced
// from a private file: no length limit, no echo), so state it changes stays. A command with a
// syntax error is refused before anything runs (a *SyntaxError, from `bash -n`). Run fails with
// ErrBusy while an earlier command still runs and ErrExited once the shell has ended; an
// error means the command did not run, except a context that ends while waiting (the command
// then runs on, and the next Step reports it).
func (s *Session) Run(ctx context.Context, command string, yield time.Duration) (Step, error) {
	return s.call("run", ctx, yield, func() error { return checkCommand("run", s.id, command) }, func(ctx context.Context, y time.Duration) (Step, error) {
		return s.run(ctx, command, y)
	})
}

// checkCommand refuses a command that cannot be run.
func checkCommand(op, id, command string) error {
	switch {
	case strings.TrimSpace(command) == "":
		return &Error{Op: op, ID: id, Kind: ErrInvalid, Err: errors.New("no command given")}
	case strings.ContainsRune(command, 0):
		return &Error{Op: op, ID: id, Kind: ErrInvalid, Err: errors.New("the command contains a NUL byte")}
	case len(command) > MaxCommandBytes:
		return &Error{Op: op, ID: id, Kind: ErrInvalid,
			Err:  fmt.Errorf("the command is %d bytes, above MaxCommandBytes (%d)", len(command), MaxCommandBytes),
			Hint: "write it to a file and run the file"}
	}
	return nil
}

// run is Run once the call is admitted.
func (s *Session) run(ctx context.Context, command string, y time.Duration) (Step, error) {
	const op = "run"
	if err := s.runnable(op); err != nil {
		return Step{}, err
	}
	if err := s.checkSyntax(ctx, command); err != nil {
		return Step{}, err
	}
	// The one command file is rewritten in place (a new file per command costs a create and
	// an unlink, slow on some file systems): bash has read it whole by the time the previous
	// command's marker came, and no command is in progress now.
	data := []byte(command + "\n")
	if _, err := s.cmdFile.WriteAt(data, 0); err != nil {
		return Step{}, &Error{Op: op, ID: s.id, Err: err, Hint: "nothing ran"}
	}
	if err := s.cmdFile.Truncate(int64(len(data))); err != nil {
		return Step{}, &Error{Op: op, ID: s.id, Err: err, Hint: "nothing ran"}
	}
	s.mu.Lock()
	s.seq++
	seq := s.seq
	s.waiting, s.waitSeq, s.waitInst, s.command, s.sent = true, seq, s.inst, command, time.Now()
	s.mu.Unlock()
	if sent, err := s.input(ctx, typedLine(s.nonce, seq)); err != nil {
		if !sent {
			s.mu.Lock()
			s.waiting = false
			s.mu.Unlock()
			return Step{}, &Error{Op: op, ID: s.id, Err: err, Hint: "the command could not be typed; nothing ran"}
		}
		return Step{}, &Error{Op: op, ID: s.id, Err: err,
			Hint: "the terminal had not taken the command yet; it will run when it does, and Poll reports it"}
	}
	return s.waitStep(op, ctx, y)
}

// Write types chars into the terminal, as a person would (a newline is Enter, "\x03" is
// Ctrl-C as a character, "\x04" Ctrl-D), for the program in the foreground: the running
// command, a REPL or a debugger it started, or the shell itself at its prompt, which then
// runs the line. Then it waits as Run does. Empty chars is Poll. At most MaxInputBytes; a
// terminal in line mode takes lines of up to 4095 bytes. It fails with ErrExited once the
// shell has ended (nothing is written).
func (s *Session) Write(ctx context.Context, chars string, yield time.Duration) (Step, error) {
	check := func() error {
		if len(chars) > MaxInputBytes {
			return &Error{Op: "write", ID: s.id, Kind: ErrInvalid,
				Err: fmt.Errorf("%d bytes is above MaxInputBytes (%d)", len(chars), MaxInputBytes)}
		}
		return nil
	}
	return s.call("write", ctx, yield, check, func(ctx context.Context, y time.Duration) (Step, error) {
		return s.write(ctx, chars, y)
	})
}

// write is Write once the call is admitted.
func (s *Session) write(ctx context.Context, chars string, y time.Duration) (Step, error) {
	const op = "write"
	if chars != "" {
		if s.shellExited() {
			r, _ := s.exitResult()
			return Step{}, &Error{Op: op, ID: s.id, Kind: ErrExited,
				Err: fmt.Errorf("status %d%s", r.ExitCode, signalSuffix(r.Signal)), Hint: "nothing was written"}
		}
		s.mu.Lock()
		toShell := !s.waiting && strings.ContainsAny(chars, "\r\n")
		if toShell {
			// A line for the shell itself: it runs it and prints a marker.
			line, _, _ := strings.Cut(strings.TrimLeft(chars, "\r\n"), "\n")
			s.waiting, s.waitSeq, s.waitInst, s.command, s.sent = true, 0, s.inst, strings.TrimRight(line, "\r"), time.Now()
		}
		s.mu.Unlock()
		if sent, err := s.input(ctx, []byte(chars)); err != nil {
			if toShell && !sent {
				s.mu.Lock()
				s.waiting = false
				s.mu.Unlock()
			}
			return Step{}, &Error{Op: op, ID: s.id, Err: err}
		}
	}
	return s.waitStep(op, ctx, y)
}

// Poll waits as Run does for the command in progress and reports the new output; with no
// command in progress it returns at once.
func (s *Session) Poll(ctx context.Context, yield time.Duration) (Step, error) {
	return s.call("poll", ctx, yield, nil, func(ctx context.Context, y time.Duration) (Step, error) {
		return s.waitStep("poll", ctx, y)
	})
}

// Interrupt sends SIGINT (Ctrl-C) to the terminal's foreground process group and waits up
// to yield for the shell's prompt: the Step's state says whether it came back (StateCompleted,
// usually with status 130) or the foreground program is still there (StateRunning: a REPL
// catches Ctrl-C). With nothing running it sends nothing and says so; once the shell has
// exited it sends nothing and returns the exited Step.
func (s *Session) Interrupt(ctx context.Context, yield time.Duration) (Step, error) {
	return s.call("interrupt", ctx, yield, nil, s.interrupt)
}

// idleStep is the Step of a signalling verb when there is nothing to signal (the shell has
// exited, or no command runs); idle says so.
func (s *Session) idleStep(op string, ctx context.Context) (st Step, idle bool, err error) {
	s.mu.Lock()
	waiting := s.waiting
	s.mu.Unlock()
	if !s.shellExited() && waiting {
		return Step{}, false, nil
	}
	st, err = s.step(op, ctx, nil)
	if err == nil && st.State == StateCompleted {
		st.Notes = append(st.Notes, "nothing was running: no signal was sent")
	}
	return st, true, err
}

// interrupt is Interrupt once the call is admitted.
func (s *Session) interrupt(ctx context.Context, y time.Duration) (Step, error) {
	const op = "interrupt"
	if st, idle, err := s.idleStep(op, ctx); idle {
		return st, err
	}
	if err := s.term.SignalForeground(ctx, os.Interrupt); err != nil {
		if done.Closed(s.term.Done()) {
			return s.step(op, ctx, nil)
		}
		return Step{}, &Error{Op: op, ID: s.id, Err: err}
	}
	return s.waitStep(op, ctx, y)
}

// TerminateForeground ends the program in the terminal's foreground and keeps the shell: it
// sends SIGTERM to the members of the foreground process group, waits up to Config.Grace for
// the shell's prompt, then sends SIGKILL to whatever of that group is left, and waits up to
// yield for the prompt, as Interrupt does. It is for a program that ignores Ctrl-C. Every
// signal goes to an exact process identity (a pid reused meanwhile is never signalled), and
// never to the session's shell: when the shell itself holds the foreground (a builtin loop,
// read), it gets Ctrl-C (SIGINT) only. With nothing running it sends nothing and says so.
func (s *Session) TerminateForeground(ctx context.Context, yield time.Duration) (Step, error) {
	return s.call("terminate foreground", ctx, yield, nil, s.terminateForeground)
}

// terminateForeground is TerminateForeground once the call is admitted.
func (s *Session) terminateForeground(ctx context.Context, y time.Duration) (Step, error) {
	const op = "terminate foreground"
	if st, idle, err := s.idleStep(op, ctx); idle {
		return st, err
	}
	fg, err := s.term.Foreground(ctx)
	if err != nil {
		if s.shellExited() {
			return s.step(op, ctx, nil)
		}
		return Step{}, &Error{Op: op, ID: s.id, Err: err}
	}
	if fg.Pgid == s.term.Pid() {
		if err := s.term.SignalForeground(ctx, os.Interrupt); err != nil && !s.shellExited() {
			return Step{}, &Error{Op: op, ID: s.id, Err: err}
		}
		st, err := s.waitStep(op, ctx, y)
		if err == nil {
			st.Notes = append(st.Notes, "the shell itself held the foreground (a builtin or a loop of its own): it was sent Ctrl-C (SIGINT), never SIGTERM or SIGKILL")
		}
		return st, err
	}
	if err := s.signalMembers(ctx, fg.Procs, sigTerm); err != nil {
		return Step{}, &Error{Op: op, ID: s.id, Err: err}
	}
	note := fmt.Sprintf("SIGTERM was sent to the foreground process group %d", fg.Pgid)
	if !s.waitDone(ctx, s.cfg.Grace) {
		if err := ctx.Err(); err != nil {
			return Step{}, &Error{Op: op, ID: s.id, Err: err}
		}
		// Whatever of the group is left, old members and new ones alike.
		left, err := s.term.Foreground(ctx)
		procs := fg.Procs
		if err == nil && left.Pgid == fg.Pgid {
			procs = append(procs, left.Procs...)
		}
		if err := s.signalMembers(ctx, procs, sigKill); err != nil {
			return Step{}, &Error{Op: op, ID: s.id, Err: err}
		}
		note += fmt.Sprintf("; it had not ended after %v: SIGKILL was sent", s.cfg.Grace)
	}
	st, err := s.waitStep(op, ctx, y)
	if err == nil {
		st.Notes = append(st.Notes, note)
	}
	return st, err
}

// waitDone waits up to d for the command in progress to finish or the shell to end; it
// reports whether that happened.
func (s *Session) waitDone(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		s.mu.Lock()
		waiting, ch := s.waiting, s.changed
		s.mu.Unlock()
		if !waiting || s.shellExited() {
			return true
		}
		select {
		case <-ch:
		case <-s.term.Done():
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// bind returns ctx, ended also when Close begins.
func (s *Session) bind(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.life, cancel)
	return ctx, func() { stop(); cancel() }
}

// input writes p to the terminal. A write the terminal does not take at once (a program that
// reads no input) goes on in the background when ctx ends, and will be delivered: sent then
// says so. The next input waits for it first.
func (s *Session) input(ctx context.Context, p []byte) (sent bool, err error) {
	if s.pending != nil {
		select {
		case err := <-s.pending:
			s.pending = nil
			if err != nil {
				s.log.Warn("earlier terminal write", "err", err)
			}
		case <-ctx.Done():
			return false, fmt.Errorf("an earlier write is not taken yet: %w", ctx.Err())
		}
	}
	s.watch.typing(ctx, p, s.inspectForeground)
	defer func() { // what was typed may change what the foreground does
		off, _ := s.rawOffset()
		s.watch.reset(time.Now(), off)
		s.waitedAt.Store(0)
	}()
	done := make(chan error, 1)
	s.writers.Add(1)
	go func() {
		defer s.writers.Done()
		_, err := s.term.Write(p)
		done <- err
	}()
	select {
	case err := <-done:
		return err == nil, err
	case <-ctx.Done():
		select {
		case err := <-done:
			return err == nil, err
		default:
		}
		s.pending = done
		return true, fmt.Errorf("the terminal has not taken the input yet: %w", ctx.Err())
	}
}
