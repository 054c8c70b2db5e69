package shell

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/subkit/subkit/subprocess"

	"github.com/subkit/subkit/internal/done"
	"github.com/subkit/subkit/internal/termtext"
	"github.com/subkit/subkit/internal/utf8bridge"
)

// waitStep waits until the command in progress has finished, the shell has ended, the
// foreground program waits for input, or yield has passed, then takes the Step.
func (s *Session) waitStep(op string, ctx context.Context, yield time.Duration) (Step, error) {
	timer := time.NewTimer(yield)
	defer timer.Stop()
	look := time.NewTimer(time.Hour)
	defer look.Stop()
	for {
		s.mu.Lock()
		waiting, ch := s.waiting, s.changed
		s.mu.Unlock()
		if !waiting {
			break
		}
		var lookC <-chan time.Time
		if !s.watch.noProbe {
			off, at := s.rawOffset()
			p, next := s.watch.look(ctx, time.Now(), off, at, s.inspectForeground)
			if p != nil {
				s.waitedAt.Store(off + 1)
				return s.step(op, ctx, p)
			}
			if next > 0 {
				look.Reset(next)
				lookC = look.C
			}
		}
		select {
		case <-ch:
			continue
		case <-lookC:
			continue
		case <-s.term.Done():
		case <-timer.C:
		case <-ctx.Done():
			if done.Closed(s.life.Done()) {
				return Step{}, &Error{Op: op, ID: s.id, Kind: ErrClosed}
			}
			return Step{}, &Error{Op: op, ID: s.id, Err: ctx.Err(),
				Hint: "the command goes on; the next Poll reports its output"}
		}
		break
	}
	return s.step(op, ctx, nil)
}

// rawOffset is how much terminal output the session has read, and when it last read some.
func (s *Session) rawOffset() (int64, time.Time) {
	s.catchUp()
	s.rmu.Lock()
	defer s.rmu.Unlock()
	return s.off, s.outAt
}

// step takes the Step as things stand; in is the confirmed wait for input, or nil.
func (s *Session) step(op string, ctx context.Context, in *probe) (Step, error) {
	s.catchUp()
	s.flushLine()
	exited := s.shellExited()
	s.mu.Lock()
	st := Step{Command: s.command, Cwd: s.cwd, ExitCode: -1}
	switch {
	case exited:
		st.State = StateExited
	case s.waiting:
		st.State = StateRunning
		st.Duration = time.Since(s.sent)
		if in != nil {
			st.State = StateWaitingInput
		}
	default:
		st.State = StateCompleted
		st.ExitCode = s.status
		if !s.sent.IsZero() {
			st.Duration = s.doneAt.Sub(s.sent)
		}
	}
	tk := s.tr.take(s.cfg.MaxOutputBytes)
	st.Output, st.Omitted, st.OmittedFrom, st.From, st.Next = s.ownPath(tk.output), tk.omitted, tk.omitFrom, tk.from, tk.next
	st.Lost, s.lost = s.lost, 0
	flags := s.flags
	s.flags = ""
	sent, errexit := s.sent, s.errexit && s.waiting
	s.mu.Unlock()
	st.Notes = notes(flags, st.Lost)
	st.Screen = s.screenText()
	if st.State == StateWaitingInput {
		w := in.wait
		w.Prompt = s.prompt()
		st.Input = &w
	}
	if st.State == StateRunning || st.State == StateWaitingInput {
		fg, err := s.term.Foreground(ctx)
		switch {
		case err != nil && done.Closed(s.term.Done()):
			st.State, st.Input = StateExited, nil // it ended meanwhile
		case err != nil:
			st.Notes = append(st.Notes, "the foreground process could not be read: "+err.Error())
		}
		for _, p := range fg.Procs {
			if p.Pid == fg.Pgid || st.Foreground == "" {
				st.Foreground, st.ForegroundPid = p.Comm, p.Pid
			}
		}
	}
	if st.State == StateExited {
		r, err := s.exitResult()
		if err != nil {
			return Step{}, &Error{Op: op, ID: s.id, Err: err}
		}
		st.ExitCode, st.Signal, st.Duration = r.ExitCode, r.Signal, 0
		if !sent.IsZero() {
			st.Duration = time.Since(sent)
		}
		if errexit && r.Signal == "" && r.ExitCode != 0 {
			st.Notes = append(st.Notes, "the shell ended while set -e was on: bash exits at once at an expansion error "+
				"(an unbound variable under set -u, a bad substitution, ${x:?}) or when a command replaced the session's ERR trap; open a new session")
		}
	}
	return st, nil
}

// ownPath shows bash's messages about the command file as a prompt's: "bash: line 1: ...".
func (s *Session) ownPath(out string) string {
	path := s.cmdFile.Name() + ": "
	if !strings.Contains(out, path) {
		return out
	}
	return strings.ReplaceAll(strings.ReplaceAll(out, "bash: "+path, "bash: "), path, "bash: ")
}

// prompt is the last line of the transcript as termtext.Render shows it: a waiting program's prompt.
func (s *Session) prompt() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	total := s.tr.total()
	data, _ := s.tr.ring.ReadAt(max(0, total-1024), 0)
	return lastLine(termtext.Render(utf8bridge.TrimStart(data)))
}

func notes(flags string, lost int64) []string {
	var out []string
	if strings.Contains(flags, "P") {
		out = append(out, "the command replaced PROMPT_COMMAND: the session put its hook back in front of it (the hook reports where each command ends)")
	}
	if strings.Contains(flags, "S") {
		out = append(out, "PS1, PS2 and PS0 were cleared again: the session shows no prompt text")
	}
	if strings.Contains(flags, "I") && strings.Contains(flags, "N") && !strings.Contains(flags, "R") {
		out = append(out, "a new bash reads the commands now (exec bash, or a nested bash: exit returns to the one before); "+
			"the session set itself up in it, so exit codes and the cwd are reported as before")
	} else if strings.Contains(flags, "I") && !strings.Contains(flags, "R") {
		out = append(out, "the shell that read the commands ended and the one before it is back at its prompt; "+
			"the exit code is that shell's status")
	}
	if strings.Contains(flags, "R") {
		out = append(out, "bash exited at an error under set -e (an unbound variable with set -u, ${x:?}, a bad substitution, "+
			"or a command that replaced the session's ERR trap); the session started a new bash in its place with the same cwd, "+
			"environment, variables, functions, aliases, options and traps: background jobs still run but are no longer its jobs")
	}
	if strings.Contains(flags, "E") {
		out = append(out, "set -e stopped a command at its first failure; the shell stays open and set -e stays on")
	}
	if lost > 0 {
		out = append(out, fmt.Sprintf("%s bytes of output were lost: they came faster than the session could read them", groupDigits(lost)))
	}
	return out
}

// ReadTranscript reads the transcript (everything the terminal showed, markers and the
// session's own lines removed, otherwise raw: Render it for reading) from offset from, at
// most max bytes (0: all that is held), in the same whole-stream coordinates as Step.From and
// Next. The newest Config.TranscriptBytes are in memory; older ones are read from the
// transcript file (TranscriptPath) while it holds them, its first Config.TranscriptFileBytes.
// Bytes held by neither are counted in the Delta's Dropped. The session keeps no read cursor.
func (s *Session) ReadTranscript(from int64, max int) (subprocess.Delta, error) {
	const op = "read transcript"
	if err := s.enter(op, context.Background()); err != nil {
		return subprocess.Delta{}, err
	}
	defer s.inflight.Done()
	if max < 0 {
		return subprocess.Delta{}, &Error{Op: op, ID: s.id, Kind: ErrInvalid, Err: fmt.Errorf("max %d is negative", max)}
	}
	s.catchUp()
	s.flushLine()
	s.mu.Lock()
	defer s.mu.Unlock()
	total := s.tr.total()
	if from < 0 || from > total {
		return subprocess.Delta{}, &Error{Op: op, ID: s.id, Kind: ErrInvalid,
			Err: fmt.Errorf("offset %d is outside the transcript [0, %d]", from, total)}
	}
	data, start, err := s.tr.readAt(from, max)
	if err != nil {
		return subprocess.Delta{}, &Error{Op: op, ID: s.id, Err: err, Hint: "the transcript file could not be read"}
	}
	d := subprocess.Delta{From: start, Data: data, Dropped: start - from, Total: total}
	d.Next = d.From + int64(len(data))
	d.Done = s.ended && d.Next == total
	return d, nil
}
