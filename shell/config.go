package shell

import (
	"cmp"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"time"

	"github.com/subkit/subkit/subprocess"

	"github.com/subkit/subkit/internal/modelenv"
)

// Defaults of Config.
const (
	DefaultCols = 200 // wide enough that most output does not wrap
	DefaultRows = 50
	// DefaultMaxOutputBytes bounds a Step's output (half from the head of the new output,
	// half from its tail): the Service's tail, subprocess.DefaultTailBytes.
	DefaultMaxOutputBytes  = subprocess.DefaultTailBytes
	DefaultTranscriptBytes = 1 << 20 // newest transcript bytes kept for ReadTranscript
	// DefaultTranscriptFileBytes bounds the transcript file.
	DefaultTranscriptFileBytes = 64 << 20
	DefaultYield               = 10 * time.Second
	DefaultMaxYield            = 10 * time.Minute
	DefaultGrace               = subprocess.DefaultGrace
	DefaultStartTimeout        = 30 * time.Second
	DefaultInputSettle         = 100 * time.Millisecond
	// MinInputSettle and MaxInputSettle bound Config.InputSettle.
	MinInputSettle = 10 * time.Millisecond
	MaxInputSettle = 10 * time.Second
	// MaxCommandBytes bounds one command (Run) and MaxInputBytes one Write.
	MaxCommandBytes = 1 << 20
	MaxInputBytes   = 64 << 10
)

// terminalTailBytes is how much raw terminal output the terminal's Handle keeps for the session's
// reader: the reader drains it as it arrives, so this only needs to cover a burst.
const terminalTailBytes = 4 << 20

// Config configures a Session. The zero value is ready to use: every zero field takes the
// default named beside it; negative values are invalid.
type Config struct {
	// Service runs the shell (and the `bash -n` syntax checks). A Service given here belongs
	// to the caller: the session never closes it, and its configuration (environment scrub,
	// guard, limits) applies as it is. Nil means the session makes a Service of its own from
	// ServiceConfig and closes it with the session.
	Service *subprocess.Service
	// ServiceConfig configures the Service a session makes for itself when Service is nil,
	// the way the bash executor makes its own: the bash startup variables (BASH_ENV, ENV,
	// SHELLOPTS, BASHOPTS) are dropped from its Env, and its Logger defaults to Logger. It
	// must be zero when Service is set. On a caller's Service the startup variables are set
	// empty for the shell instead (Env may still set them).
	ServiceConfig subprocess.Config

	// Bash is the shell program; empty means "bash", searched in the Service's scrubbed PATH.
	Bash string
	// Dir is the directory the shell starts in; empty means the Service's Cwd.
	Dir string
	// Env is NAME=VALUE set in the shell's environment after the model-friendly defaults
	// (NO_COLOR=1, TERM=xterm-256color, PAGER=cat, GIT_PAGER=cat, GH_PAGER=cat,
	// GIT_TERMINAL_PROMPT=0, PYTHONUNBUFFERED=1, GIT_EDITOR and GIT_SEQUENCE_EDITOR that fail
	// saying how to give the text on the command line instead; LANG=C.UTF-8 when no locale
	// is set), which it may override.
	Env []string
	// Cols and Rows are the terminal size; 0 means DefaultCols x DefaultRows.
	Cols, Rows int
	// MaxOutputBytes bounds the Output of one Step: when the new output is longer, the Step
	// shows its first and last MaxOutputBytes/2 bytes and says how many it left out (they
	// stay readable with ReadTranscript while the transcript holds them). Default
	// DefaultMaxOutputBytes.
	MaxOutputBytes int
	// TranscriptBytes is how many of the newest transcript bytes the session keeps for
	// ReadTranscript; it is at least MaxOutputBytes. Default DefaultTranscriptBytes.
	TranscriptBytes int
	// TranscriptFileBytes bounds the transcript file (Session.TranscriptPath), which holds the
	// transcript from its start, so that ReadTranscript reaches what the memory no longer
	// holds; past it the file grows no more. Default DefaultTranscriptFileBytes (64 MiB); at
	// most 1 TiB. NoTranscriptFile keeps the transcript in memory only.
	TranscriptFileBytes int64
	NoTranscriptFile    bool
	// Yield is how long Run, Write and Poll wait for the command to finish when they are
	// given 0; default DefaultYield. MaxYield is the longest wait they accept; default
	// DefaultMaxYield.
	Yield, MaxYield time.Duration
	// Grace is how long Close waits between asking the session's processes to stop and
	// forcing them (SIGTERM, then SIGKILL). Default DefaultGrace.
	Grace time.Duration
	// StartTimeout bounds Open's wait for the shell's first prompt, whatever the context
	// says. Default DefaultStartTimeout.
	StartTimeout time.Duration
	// InputSettle is how long the output must stay quiet, with the foreground process group
	// blocked reading the terminal at the start and at the end of that time and nothing of it
	// run in between, before a Step says StateWaitingInput: Run, Write and Poll then return
	// at once, without waiting out their yield. Linux reads this from /proc (the syscall
	// each member is blocked in and the descriptors it waits on, which needs ptrace access
	// to the session's processes; failing that, the wait channel, believed after four times
	// InputSettle). On other systems such a program is reported running at the yield.
	// Default DefaultInputSettle, between MinInputSettle and MaxInputSettle.
	InputSettle time.Duration
	// Logger receives diagnostics (cleanup trouble); nil means none.
	Logger *slog.Logger
}

// Validate reports the first invalid field.
func (c Config) Validate() error {
	bad := func(field, format string, args ...any) error {
		return &ConfigError{Field: field, Err: fmt.Errorf(format, args...)}
	}
	if c.Service != nil && !reflect.ValueOf(c.ServiceConfig).IsZero() {
		return bad("ServiceConfig", "is set together with Service; configure the Service you pass instead")
	}
	if strings.ContainsRune(c.Bash, 0) || strings.ContainsRune(c.Dir, 0) {
		return bad("Bash/Dir", "contains a NUL byte")
	}
	for i, kv := range c.Env {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" || strings.ContainsRune(kv, 0) {
			return bad(fmt.Sprintf("Env[%d]", i), "%q is not NAME=VALUE (or has a NUL byte)", kv)
		}
	}
	ints := []struct {
		field string
		n     int
		max   int
	}{
		{"Cols", c.Cols, 0xffff}, {"Rows", c.Rows, 0xffff},
		{"MaxOutputBytes", c.MaxOutputBytes, subprocess.MaxTailBytes},
		{"TranscriptBytes", c.TranscriptBytes, subprocess.MaxTailBytes},
	}
	for _, n := range ints {
		if n.n < 0 {
			return bad(n.field, "%d is negative; use 0 for the default", n.n)
		}
		if n.n > n.max {
			return bad(n.field, "%d is above the limit %d", n.n, n.max)
		}
	}
	if c.TranscriptFileBytes < 0 || c.TranscriptFileBytes > 1<<40 {
		return bad("TranscriptFileBytes", "%d is outside [0, 1 TiB]; use 0 for the default", c.TranscriptFileBytes)
	}
	durs := []struct {
		field string
		d     time.Duration
	}{{"Yield", c.Yield}, {"MaxYield", c.MaxYield}, {"Grace", c.Grace}, {"StartTimeout", c.StartTimeout}, {"InputSettle", c.InputSettle}}
	for _, d := range durs {
		if d.d < 0 {
			return bad(d.field, "%v is negative; use 0 for the default", d.d)
		}
	}
	d := c.withDefaults()
	if d.InputSettle < MinInputSettle || d.InputSettle > MaxInputSettle {
		return bad("InputSettle", "%v is outside [%v, %v]", d.InputSettle, MinInputSettle, MaxInputSettle)
	}
	if d.Yield > d.MaxYield {
		return bad("Yield", "%v is above MaxYield %v", d.Yield, d.MaxYield)
	}
	if d.TranscriptBytes < d.MaxOutputBytes {
		return bad("TranscriptBytes", "%d is below MaxOutputBytes %d: a Step's tail must still be in the transcript",
			d.TranscriptBytes, d.MaxOutputBytes)
	}
	if d.MaxOutputBytes < 2*markLen {
		return bad("MaxOutputBytes", "%d is too small to show a head and a tail (at least %d)", d.MaxOutputBytes, 2*markLen)
	}
	return nil
}

// markLen is room enough for the omitted-bytes mark between head and tail.
const markLen = 64

func (c Config) withDefaults() Config {
	if c.Bash == "" {
		c.Bash = "bash"
	}
	if c.Cols == 0 {
		c.Cols = DefaultCols
	}
	if c.Rows == 0 {
		c.Rows = DefaultRows
	}
	if c.MaxOutputBytes == 0 {
		c.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if c.TranscriptBytes == 0 {
		c.TranscriptBytes = max(DefaultTranscriptBytes, c.MaxOutputBytes)
	}
	if c.TranscriptFileBytes == 0 {
		c.TranscriptFileBytes = DefaultTranscriptFileBytes
	}
	if c.MaxYield == 0 {
		c.MaxYield = DefaultMaxYield
	}
	if c.Yield == 0 {
		c.Yield = min(DefaultYield, c.MaxYield)
	}
	if c.Grace == 0 {
		c.Grace = DefaultGrace
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = DefaultStartTimeout
	}
	if c.InputSettle == 0 {
		c.InputSettle = DefaultInputSettle
	}
	c.Env = append([]string(nil), c.Env...)
	return c
}

// ownService makes the Service of a session or Manager whose caller gave none, the way every
// adapter makes one (modelenv.NewService: the startup variables dropped); it logs to Logger
// unless ServiceConfig names a Logger of its own.
func (c Config) ownService() (*subprocess.Service, error) {
	sc := c.ServiceConfig
	sc.Logger = cmp.Or(sc.Logger, c.Logger)
	return modelenv.NewService(sc)
}
