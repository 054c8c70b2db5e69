package shell

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/subkit/subkit/subprocess"

	"github.com/subkit/subkit/internal/done"
	"github.com/subkit/subkit/internal/modelenv"
	"github.com/subkit/subkit/internal/termtext"
)

// Open starts a session: a fresh interactive, non-login bash on a pty (Config.Cols x Rows)
// that reads no startup file of the user, in the model-friendly environment, under the
// Service's guard when it has one. It returns once the shell shows its first prompt.
func Open(ctx context.Context, cfg Config) (*Session, error) {
	return open(ctx, cfg, "", nil)
}

func open(ctx context.Context, cfg Config, id string, clock *atomic.Uint64) (*Session, error) {
	const op = "open"
	if ctx == nil {
		return nil, invalid(op, "nil context")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, &Error{Op: op, ID: id, Err: err}
	}
	c := cfg.withDefaults()
	s := &Session{cfg: c, svc: c.Service, id: id, clock: clock, log: c.Logger,
		turn: make(chan struct{}, 1), changed: make(chan struct{}),
		readerStop: make(chan struct{}), readerDone: make(chan struct{})}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.clock == nil {
		s.clock = new(atomic.Uint64)
	}
	s.life, s.stop = context.WithCancel(context.Background())
	s.tr = newTranscript(c.TranscriptBytes, c.MaxOutputBytes)
	s.watch.settle = c.InputSettle
	fail := func(err error) (*Session, error) {
		close(s.readerStop)
		if s.term == nil {
			close(s.readerDone)
		}
		err = errors.Join(err, s.release())
		return nil, err
	}
	if s.svc == nil {
		svc, err := c.ownService()
		if err != nil {
			s.stop()
			return nil, &Error{Op: op, ID: id, Err: err}
		}
		s.svc, s.ownSvc = svc, true
	} else if err := s.svc.Err(); errors.Is(err, subprocess.ErrClosed) {
		// Before the runtime root, which Close removed, is looked at.
		return fail(&Error{Op: op, ID: id, Kind: ErrClosed, Err: err, Hint: "Config.Service was closed; pass an open Service"})
	}
	bash, err := s.svc.ResolveExecutable(c.Bash)
	if err != nil {
		return fail(&Error{Op: op, ID: id, Err: err, Hint: "install bash or set Config.Bash"})
	}
	s.bash = bash
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return fail(&Error{Op: op, ID: id, Err: err})
	}
	s.nonce = hex.EncodeToString(nonce)
	dir, err := os.MkdirTemp(s.svc.RuntimeRoot(), "shell-")
	if err != nil {
		return fail(&Error{Op: op, ID: id, Err: err, Hint: "the Service's runtime root is not writable"})
	}
	s.dir = dir
	if !c.NoTranscriptFile {
		f, err := os.OpenFile(filepath.Join(dir, "transcript"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if err != nil {
			return fail(&Error{Op: op, ID: id, Err: err})
		}
		s.tr.file, s.tr.fileMax = f, c.TranscriptFileBytes
	}
	rc := filepath.Join(dir, "rc")
	if err := os.WriteFile(rc, []byte(rcFile(s.nonce, rc, dir)), 0o600); err != nil {
		return fail(&Error{Op: op, ID: id, Err: err})
	}
	cmdFile, err := os.OpenFile(filepath.Join(dir, "command"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fail(&Error{Op: op, ID: id, Err: err})
	}
	s.cmdFile = cmdFile
	s.sc = newScanner(newOwnLines(s.nonce, cmdFile.Name(), promptCommand(s.nonce, rc)), s.emit, s.marker, sessionScreen{s})
	env := append(modelenv.Terminal(), c.Env...)
	if !s.ownSvc {
		// A caller's Service keeps the host's startup variables: they are set empty first,
		// so that Config.Env may still set them.
		env = append(modelenv.EmptyStartup(), env...)
	}
	term, err := s.svc.Spawn(ctx, subprocess.Spec{
		Path: c.Bash, Args: []string{"--noprofile", "--rcfile", rc, "--noediting", "-i"}, // $0 as given
		Dir: c.Dir, Env: env, Grace: c.Grace,
		TTY:      &subprocess.TTY{Cols: c.Cols, Rows: c.Rows, TailBytes: terminalTailBytes},
		Readable: []string{dir}, // the rc and command files, in the runtime root a sandbox makes private
	})
	if err != nil {
		return fail(&Error{Op: op, ID: id, Err: err})
	}
	s.term = term
	go s.read()
	if err := s.awaitReady(ctx); err != nil {
		return fail(err)
	}
	s.touch()
	return s, nil
}

// awaitReady waits for the first marker: the rc file ran and the shell shows its prompt.
func (s *Session) awaitReady(ctx context.Context) error {
	timer := time.NewTimer(s.cfg.StartTimeout)
	defer timer.Stop()
	for {
		s.mu.Lock()
		ready, ch := s.ready, s.changed
		s.mu.Unlock()
		if ready {
			return nil
		}
		select {
		case <-ch:
			continue
		case <-ctx.Done():
			return &Error{Op: "open", ID: s.id, Err: ctx.Err()}
		case <-timer.C:
		case <-s.term.Done():
			s.catchUp()
			s.mu.Lock()
			ready = s.ready
			s.mu.Unlock()
			if ready {
				return nil
			}
		}
		s.catchUp()
		s.flushLine()
		s.mu.Lock()
		out, _ := s.tr.ring.ReadAt(0, 0)
		s.mu.Unlock()
		what := fmt.Sprintf("no prompt marker within %v", s.cfg.StartTimeout)
		if done.Closed(s.term.Done()) {
			r, _ := s.term.Wait(context.Background())
			what = fmt.Sprintf("the shell exited first (status %d%s)", r.ExitCode, signalSuffix(r.Signal))
		}
		return &Error{Op: "open", ID: s.id, Kind: ErrStart, Err: errors.New(what),
			Hint: "its output: " + strings.TrimSpace(termtext.Render(out))}
	}
}

func signalSuffix(sig string) string {
	if sig == "" {
		return ""
	}
	return ", " + sig
}

// Close ends the shell and everything it started (jobs, nohup'd and setsid children, by
// the terminal's identity-fenced cleanup: SIGHUP and SIGTERM, SIGKILL after Config.Grace),
// waits for them, releases the pty, removes the session's private files, and closes the
// Service if the session made it. Calls in progress return ErrClosed. It is safe to call
// more than once; later calls return the first one's error.
func (s *Session) Close() error {
	if s == nil || s.term == nil {
		return &Error{Op: "close", Kind: ErrInvalid, Err: errors.New("the Session was not returned by Open")}
	}
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		// The shell's EXIT trap must not take the hangup of Close for an error to recover from.
		if err := os.WriteFile(filepath.Join(s.dir, "closing"), nil, 0o600); err != nil {
			s.log.Warn("mark the session closing", "err", err)
		}
		close(s.readerStop)
		if err := s.release(); err != nil {
			s.closeErr = &Error{Op: "close", ID: s.id, Err: err}
		}
	})
	return s.closeErr
}

// release ends the terminal and frees everything Open made. readerStop is closed.
func (s *Session) release() error {
	s.stop()
	var errs []error
	if s.term != nil {
		errs = append(errs, s.term.Close())
		<-s.readerDone
	}
	s.rmu.Lock()
	if s.scr != nil {
		errs = append(errs, s.scr.close())
		s.scr = nil
	}
	s.rmu.Unlock()
	s.writers.Wait()
	s.inflight.Wait()
	if s.cmdFile != nil {
		errs = append(errs, s.cmdFile.Close())
	}
	if s.tr.file != nil {
		errs = append(errs, s.tr.file.Close())
	}
	if s.dir != "" {
		errs = append(errs, os.RemoveAll(s.dir))
	}
	if s.ownSvc {
		errs = append(errs, s.svc.Close())
	}
	return errors.Join(errs...)
}

// shellExited reports whether the shell has ended or said it is exiting.
func (s *Session) shellExited() bool {
	if done.Closed(s.term.Done()) {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exiting
}

// exitResult is how the shell ended: the terminal's result once it has settled, else the
// status the shell said it exits with.
func (s *Session) exitResult() (subprocess.Result, error) {
	if done.Closed(s.term.Done()) {
		return s.term.Wait(context.Background()) // settled: it returns at once
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return subprocess.Result{Pid: s.term.Pid(), Outcome: subprocess.Outcome{ExitCode: s.exitStatus}}, nil
}
