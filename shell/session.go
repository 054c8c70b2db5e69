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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/subkit/subkit/sandbox"
	"github.com/subkit/subkit/subprocess"

	"github.com/subkit/subkit/internal/modelenv"
	"github.com/subkit/subkit/internal/utf8bridge"
)

// State is where a session's shell stands at the end of a Step.
type State string

const (
	// StateCompleted: the shell is back at its prompt; the Step has the command's exit
	// status and the shell's cwd.
	StateCompleted State = "completed"
	// StateRunning: the command (or whatever it started in the foreground) still runs; the
	// Step names the terminal's foreground process group. Poll, Write input to it, or
	// Interrupt it.
	StateRunning State = "running"
	// StateExited: the shell has ended; the Step has its exit status. The session can run
	// nothing more.
	StateExited State = "exited"
	// StateWaitingInput: the command (or a program it runs in the foreground) is blocked
	// reading the terminal and its output has been quiet for Config.InputSettle: it waits for
	// input (a prompt, a REPL, a password). Step.Input says who reads and how the terminal
	// takes input; Write answers it, Interrupt ends it. Only Linux tells (see Config.InputSettle);
	// elsewhere such a program is reported running.
	StateWaitingInput State = "waiting_for_input"
)

// Step is what one Run, Write, Poll or Interrupt saw: the output since the previous Step and
// where the shell stands now.
type Step struct {
	State State
	// Command is the command this Step is about: the last one given to Run (or the line
	// written to the shell at its prompt), still running or just finished.
	Command string
	// Output is the new output since the previous Step, as Render shows it: at most
	// Config.MaxOutputBytes from the head and the tail of it, with a mark saying how many
	// bytes were left out between them (Omitted).
	Output  string
	Omitted int64
	// OmittedFrom is the transcript offset of the first omitted byte (when Omitted > 0):
	// ReadTranscript(OmittedFrom, n) reads them while the transcript holds them.
	OmittedFrom int64
	// From and Next are the transcript offsets of this Step's output: ReadTranscript(From, 0)
	// reads it whole while the transcript still holds it; Next is where the next Step starts.
	From, Next int64
	// Lost counts terminal bytes of this Step that the session could not read in time (its
	// reader fell more than the terminal's buffer behind a flood); they are in no transcript.
	Lost int64
	// ExitCode is, for StateCompleted, the command's status ($?: 128+N when signal N ended
	// it, 130 after an Interrupt); for StateExited, the shell's status, or -1 when a signal
	// ended it (Signal says which). It is -1 while running.
	ExitCode int
	Signal   string
	// Cwd is the shell's working directory at its last prompt ("" when it could not be read).
	Cwd string
	// Duration is how long the command ran (completed) or has run so far (running), from the
	// moment it was sent.
	Duration time.Duration
	// Foreground is, for StateRunning, the command name of the terminal's foreground process
	// group (its leader's, e.g. "python3", "sleep"); the shell's own name ("bash") when the
	// shell itself runs in the foreground (a builtin, a loop, `read`). ForegroundPid is its pid.
	Foreground    string
	ForegroundPid int
	// Screen is, while a full-screen program holds the terminal's alternate screen (vim, less,
	// top, watch), that screen as a person would see it: Config.Rows lines of at most
	// Config.Cols characters, trailing blanks and empty rows trimmed. When the program left
	// the screen during this Step, it is the screen as it left it. "" otherwise. The bytes
	// such a program writes go to the terminal emulator that draws the screen, not to Output
	// or the transcript.
	Screen string
	// Input is, for StateWaitingInput, who waits for input and how the terminal takes it
	// (line mode, echo off at a password prompt), with the prompt's text; nil otherwise.
	Input *InputWait
	// Notes are short sentences for the reader: the command replaced PROMPT_COMMAND and the
	// session put its hook back, set -e stopped a command, output was lost, ...
	Notes []string
}

// Info is a Session at one moment, without waiting for anything.
type Info struct {
	ID       string
	Pid      int
	State    State  // as in Step; waiting_for_input while no output came since a Step said so
	Command  string // the last command
	ExitCode int    // as in Step: the last command's status, or the shell's once it exited
	Cwd      string
	Idle     time.Duration // since the session was last used (Run, Write, Poll, Interrupt)
	// TranscriptPath is the file that holds the transcript (Session.TranscriptPath), or "".
	TranscriptPath string
}

// Session is one interactive bash on a terminal of its own, for a model to type into: a cd,
// an export, a function or an activated virtualenv stays for the next command. All methods
// are safe for concurrent use; Run, Write, Poll and Interrupt take turns.
type Session struct {
	cfg     Config
	svc     *subprocess.Service
	ownSvc  bool
	id      string
	term    *subprocess.Terminal
	bash    string
	nonce   string
	dir     string
	cmdFile *os.File // the command file, rewritten for each Run
	log     *slog.Logger
	clock   *atomic.Uint64 // shared with a Manager: the order of use, for pruning
	used    atomic.Uint64
	usedAt  atomic.Int64 // unix nanoseconds of the last use

	turn chan struct{} // held by the Run, Write, Poll or Interrupt in progress

	life       context.Context // ends when Close begins
	stop       context.CancelFunc
	readerStop chan struct{}
	readerDone chan struct{}
	writers    sync.WaitGroup // goroutines writing to the terminal
	inflight   sync.WaitGroup // calls past the closed check

	watch inputWatch // when the foreground waits for input; used by the call holding the turn
	// waitedAt is 1 + the terminal offset at which a Step last said waiting_for_input, or 0
	// after input was typed: Info says waiting_for_input while no output came since.
	waitedAt atomic.Int64

	rmu     sync.Mutex // the reader's state
	sc      *scanner
	off     int64
	outAt   time.Time  // when output last arrived
	scr     *screen    // the alternate screen's emulator while a program holds it
	lastScr string     // the screen as the program that held it left it, for the next Step
	pending chan error // a write to the terminal still in progress, or nil

	mu         sync.Mutex
	tr         *transcript
	changed    chan struct{} // closed and replaced at every marker and at the end of output
	ready      bool
	waiting    bool   // a command was sent and its marker has not come
	waitSeq    int    // the number of the command waited for; 0 for a line written at the prompt
	inst       string // the bash that printed the last marker
	waitInst   string // the bash the command in progress was given to
	command    string
	sent       time.Time
	doneAt     time.Time
	status     int
	cwd        string
	flags      string // marker flags since the last Step
	errexit    bool   // set -e was on at the last prompt
	lost       int64  // since the last Step
	ended      bool   // the terminal's output has ended
	exiting    bool   // the shell said it exits (flag X), with exitStatus
	exitStatus int
	closed     bool
	seq        int

	closeOnce sync.Once
	closeErr  error
}

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
	} else if err := modelenv.CheckOpen(ctx, s.svc); err != nil {
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
	term, err := s.svc.SpawnTerminal(ctx, subprocess.TerminalSpec{
		Path: c.Bash, Args: []string{"--noprofile", "--rcfile", rc, "--noediting", "-i"}, // $0 as given
		Dir: c.Dir, Env: env, Cols: c.Cols, Rows: c.Rows, TailBytes: terminalTailBytes, Grace: c.Grace,
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
		if isDone(s.term.Done()) {
			r, _ := s.term.Wait(context.Background())
			what = fmt.Sprintf("the shell exited first (status %d%s)", r.ExitCode, signalSuffix(r.Signal))
		}
		return &Error{Op: "open", ID: s.id, Kind: ErrStart, Err: errors.New(what),
			Hint: "its output: " + strings.TrimSpace(Render(out))}
	}
}

func signalSuffix(sig string) string {
	if sig == "" {
		return ""
	}
	return ", " + sig
}

// ID is the session's id in its Manager, or "" for a session opened alone.
func (s *Session) ID() string {
	if s == nil {
		return ""
	}
	return s.id
}

// Pid is the shell's pid (it leads the terminal's session), or 0.
func (s *Session) Pid() int {
	if s == nil || s.term == nil {
		return 0
	}
	return s.term.Pid()
}

// Sandbox says how the shell is confined (the Service's Config.Sandbox), or is nil when it runs
// unconfined.
func (s *Session) Sandbox() *sandbox.Report {
	if s == nil || s.term == nil {
		return nil
	}
	return s.term.Sandbox()
}

// TranscriptPath is the file that holds the whole transcript (raw, as ReadTranscript reads it),
// up to Config.TranscriptFileBytes, while the session is open; Close removes it. It is "" when
// Config.NoTranscriptFile is set.
func (s *Session) TranscriptPath() string {
	if s == nil || s.tr == nil || s.tr.file == nil {
		return ""
	}
	return s.tr.file.Name()
}

func (s *Session) touch() {
	s.used.Store(s.clock.Add(1))
	s.usedAt.Store(time.Now().UnixNano())
}

// enter admits a call: a valid Session, a context, not closed.
func (s *Session) enter(op string, ctx context.Context) error {
	if s == nil || s.term == nil {
		return &Error{Op: op, Kind: ErrInvalid, Err: errors.New("the Session was not returned by Open"),
			Hint: "use the *Session that Open or Manager.Open returned"}
	}
	if ctx == nil {
		return &Error{Op: op, ID: s.id, Kind: ErrInvalid, Err: errors.New("nil context")}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return &Error{Op: op, ID: s.id, Kind: ErrClosed}
	}
	s.inflight.Add(1)
	return nil
}

// takeTurn waits for the session's turn.
func (s *Session) takeTurn(op string, ctx context.Context) error {
	select {
	case s.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return &Error{Op: op, ID: s.id, Err: ctx.Err(), Hint: "another call on this session is still waiting"}
	case <-s.life.Done():
		return &Error{Op: op, ID: s.id, Kind: ErrClosed}
	}
}

// take waits for the session's turn; an ended ctx never gets it.
func (s *Session) take(op string, ctx context.Context) error {
	if err := s.takeTurn(op, ctx); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		s.give()
		if isDone(s.life.Done()) {
			return &Error{Op: op, ID: s.id, Kind: ErrClosed}
		}
		return &Error{Op: op, ID: s.id, Err: err}
	}
	return nil
}

func (s *Session) give() { <-s.turn }

func (s *Session) yield(op string, d time.Duration) (time.Duration, error) {
	switch {
	case d < 0:
		return 0, &Error{Op: op, ID: s.id, Kind: ErrInvalid, Err: fmt.Errorf("yield %v is negative; use 0 for the default %v", d, s.cfg.Yield)}
	case d > s.cfg.MaxYield:
		return 0, &Error{Op: op, ID: s.id, Kind: ErrInvalid, Err: fmt.Errorf("yield %v is above MaxYield %v", d, s.cfg.MaxYield),
			Hint: "Poll again to keep waiting"}
	case d == 0:
		return s.cfg.Yield, nil
	}
	return d, nil
}

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

// call admits one call of op: it refuses a closed session and what check refuses, checks the
// yield, binds ctx to the session's life, takes the session's turn and marks it used, then
// runs body; an error of a call Close cut short says ErrClosed.
func (s *Session) call(op string, ctx context.Context, yield time.Duration, check func() error,
	body func(ctx context.Context, y time.Duration) (Step, error)) (_ Step, err error) {
	if err := s.enter(op, ctx); err != nil {
		return Step{}, err
	}
	defer s.inflight.Done()
	defer s.closedErr(op, &err)
	if check != nil {
		if err := check(); err != nil {
			return Step{}, err
		}
	}
	y, err := s.yield(op, yield)
	if err != nil {
		return Step{}, err
	}
	ctx, cancel := s.bind(ctx)
	defer cancel()
	if err := s.take(op, ctx); err != nil {
		return Step{}, err
	}
	defer s.give()
	s.touch()
	return body(ctx, y)
}

// closedErr makes an error of a call that Close cut short say ErrClosed.
func (s *Session) closedErr(op string, err *error) {
	if *err != nil && isDone(s.life.Done()) && !errors.Is(*err, ErrClosed) {
		*err = &Error{Op: op, ID: s.id, Kind: ErrClosed, Err: *err}
	}
}

// runnable says why a command cannot be sent now.
func (s *Session) runnable(op string) error {
	if s.shellExited() {
		r, _ := s.exitResult()
		return &Error{Op: op, ID: s.id, Kind: ErrExited,
			Err:  fmt.Errorf("status %d%s", r.ExitCode, signalSuffix(r.Signal)),
			Hint: "nothing ran; open a new session"}
	}
	s.mu.Lock()
	waiting, cmd := s.waiting, s.command
	s.mu.Unlock()
	if waiting {
		return &Error{Op: op, ID: s.id, Kind: ErrBusy, Err: fmt.Errorf("%q has not finished", cmd),
			Hint: "nothing ran; Poll it, Write input to it, or Interrupt it first"}
	}
	return nil
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
		if isDone(s.term.Done()) {
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
			if isDone(s.life.Done()) {
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
		case err != nil && isDone(s.term.Done()):
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

// prompt is the last line of the transcript as Render shows it: a waiting program's prompt.
func (s *Session) prompt() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	total := s.tr.total()
	data, _ := s.tr.ring.ReadAt(max(0, total-1024), 0)
	return lastLine(Render(utf8bridge.TrimStart(data)))
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

// Info describes the session now, without waiting.
func (s *Session) Info() Info {
	if s == nil || s.term == nil {
		return Info{}
	}
	s.catchUp()
	exited := s.shellExited()
	s.rmu.Lock()
	off := s.off
	s.rmu.Unlock()
	s.mu.Lock()
	in := Info{ID: s.id, Pid: s.term.Pid(), Command: s.command, Cwd: s.cwd, ExitCode: s.status,
		Idle: time.Since(time.Unix(0, s.usedAt.Load())), TranscriptPath: s.TranscriptPath()}
	switch {
	case exited:
		in.State = StateExited
	case s.waiting && s.waitedAt.Load() == off+1:
		in.State, in.ExitCode = StateWaitingInput, -1
	case s.waiting:
		in.State, in.ExitCode = StateRunning, -1
	default:
		in.State = StateCompleted
	}
	s.mu.Unlock()
	if exited {
		if r, err := s.exitResult(); err == nil {
			in.ExitCode = r.ExitCode
		}
	}
	return in
}

// Close ends the shell and everything it started (jobs, nohup'd and setsid children, by
// the Terminal's identity-fenced cleanup: SIGHUP and SIGTERM, SIGKILL after Config.Grace),
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
		if _, err := s.term.WaitOutput(ctx, off, 1); err != nil {
			if ctx.Err() == nil {
				s.log.Warn("wait for terminal output", "err", err)
			}
			s.catchUp()
			return
		}
	}
}

// readChunk is the most one terminal read takes.
const readChunk = 256 << 10

// catchUp feeds the scanner whatever the terminal holds now; it reports whether the output
// has ended.
func (s *Session) catchUp() bool {
	s.rmu.Lock()
	defer s.rmu.Unlock()
	for {
		d, err := s.term.ReadOutput(s.off, readChunk)
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

// shellExited reports whether the shell has ended or said it is exiting.
func (s *Session) shellExited() bool {
	if isDone(s.term.Done()) {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.exiting
}

// exitResult is how the shell ended: the Terminal's result once it has settled, else the
// status the shell said it exits with.
func (s *Session) exitResult() (subprocess.TerminalResult, error) {
	if isDone(s.term.Done()) {
		return s.term.Wait(context.Background()) // settled: it returns at once
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return subprocess.TerminalResult{Pid: s.term.Pid(), ExitCode: s.exitStatus}, nil
}

// notify wakes the waiters; called with mu held.
func (s *Session) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
