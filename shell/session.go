package shell

import (
	"context"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/subkit/subkit/sandbox"
	"github.com/subkit/subkit/subprocess"
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
//
// The code is split by concern: lifecycle.go opens and closes it, admission.go admits calls
// and hands out the turn, commands.go types commands and input into the terminal, step.go
// assembles what a Step reports, and reader.go follows the terminal's output and its markers.
type Session struct {
	// Set by Open, fixed afterwards (lifecycle.go).
	cfg     Config
	svc     *subprocess.Service
	ownSvc  bool
	id      string
	term    *subprocess.Handle
	bash    string
	nonce   string
	dir     string
	cmdFile *os.File // the command file, rewritten for each Run
	log     *slog.Logger
	clock   *atomic.Uint64 // shared with a Manager: the order of use, for pruning
	used    atomic.Uint64
	usedAt  atomic.Int64 // unix nanoseconds of the last use

	// Admission (admission.go) and lifecycle (lifecycle.go).
	turn       chan struct{}   // held by the Run, Write, Poll or Interrupt in progress
	life       context.Context // ends when Close begins
	stop       context.CancelFunc
	readerStop chan struct{}
	readerDone chan struct{}
	writers    sync.WaitGroup // goroutines writing to the terminal
	inflight   sync.WaitGroup // calls past the closed check

	// Held by the call that has the turn (commands.go, step.go).
	watch inputWatch // when the foreground waits for input
	// waitedAt is 1 + the terminal offset at which a Step last said waiting_for_input, or 0
	// after input was typed: Info says waiting_for_input while no output came since.
	waitedAt atomic.Int64

	// The reader's state (reader.go), and the terminal write in progress (commands.go).
	rmu     sync.Mutex
	sc      *scanner
	off     int64
	outAt   time.Time  // when output last arrived
	scr     *screen    // the alternate screen's emulator while a program holds it
	lastScr string     // the screen as the program that held it left it, for the next Step
	pending chan error // a write to the terminal still in progress, or nil

	// What the markers said and the transcript (reader.go writes, step.go reads), guarded by
	// mu; closed is lifecycle's.
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

	closeOnce sync.Once // lifecycle.go
	closeErr  error
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

// readChunk is the most one terminal read takes.
const readChunk = 256 << 10
