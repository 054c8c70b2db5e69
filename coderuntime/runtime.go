package coderuntime

import (
	"time"

	"github.com/subkit/subkit/subprocess"
)

// Language names the language of a Request's code.
type Language string

// The languages the subprocess runtime knows.
const (
	Python3 Language = "python3"
	Node    Language = "node"
	Bash    Language = "bash"
)

// Defaults applied to zero fields of a Config (and through it, of a Request). The output
// budgets default to the Service's tail (subprocess.DefaultTailBytes) and the grace to its
// grace (subprocess.DefaultGrace).
const (
	// DefaultTimeout bounds a run when neither the Request nor the Config says otherwise.
	DefaultTimeout = 60 * time.Second
	// drainGrace is how long a run's (or a session interpreter's) output may keep draining
	// after the code has exited while processes it started hold the pipes (`server &`); then
	// the Result settles with PipesHeld and they are ended. Short, as the bash executor's: the
	// Service's grace would add seconds to every such run.
	drainGrace = 250 * time.Millisecond
)

// Request is one piece of code to run. Zero fields take the runtime's defaults.
type Request struct {
	// Language of Code; required.
	Language Language
	// Code is the program text, run as a file of the language (main.py, main.js, main.sh).
	Code string
	// Stdin, when non-nil, is written to the code's standard input, which is then closed.
	// When nil, standard input is the null device: a read gets end-of-file at once.
	Stdin []byte
	// Timeout bounds the run; the Result then says TimedOut. 0 means the runtime's default.
	Timeout time.Duration
	// Grace is how long a terminated run has between SIGTERM and SIGKILL. 0 means the
	// runtime's default.
	Grace time.Duration
	// DrainGrace is how long processes the code started may keep its output open after it
	// has exited; then the Result says PipesHeld and they are ended. 0 means the runtime's
	// default (250ms).
	DrainGrace time.Duration
	// Env entries (NAME=VALUE) are set in the code's environment, over the runtime's
	// credential-scrubbed base, and win.
	Env []string
	// Dir is the working directory. Empty means the run's private directory, which is removed
	// when Run returns.
	Dir string
	// Interpreter overrides the program that runs Code: a name searched in the runtime's PATH
	// or an absolute path. Empty means the runtime's choice for Language.
	Interpreter string
	// StdoutBytes and StderrBytes are how many trailing bytes of each stream the Result keeps;
	// 0 means the runtime's default.
	StdoutBytes, StderrBytes int
	// SpillBytes, when > 0, also keeps each whole stream of at most that many bytes in a spill
	// file (Output.SpillPath); 0 means the runtime's default.
	SpillBytes int64
}

// Result is how a run ended.
type Result struct {
	Language Language
	// Outcome is how the interpreter ended. TimedOut: the Request's timeout expired.
	// Cancelled: Run's ctx ended, or the Runtime was closed, during the run. Either way the
	// run was terminated.
	// PipesHeld: processes the code started still held its output open after it exited;
	// the result did not wait for them beyond the drain grace, and they were ended. Sandbox
	// says how the run was confined (the Service's Config.Sandbox), or is nil.
	subprocess.Outcome
	// Stdout and Stderr are what the code wrote, each kept apart. They are Outputs, text
	// tails as a session's Execution has, not the Service's StreamResults (see
	// subprocess.Outcome).
	Stdout, Stderr Output
	// Error is the uncaught exception or syntax error that ended the code, or nil. Runtimes
	// report it for python3 and node; bash has no such notion.
	Error *CodeError
}

// Output is what a run wrote to one stream.
type Output struct {
	// Tail is the end of the stream, at most the Request's byte budget. When the stream was
	// truncated, Tail starts at a whole UTF-8 character: the continuation bytes of a character
	// cut at the truncation edge are dropped. Other bytes, valid UTF-8 or not, are kept as
	// the code wrote them.
	Tail string
	// TotalBytes counts every byte the stream produced.
	TotalBytes int64
	// Truncated: Tail is not the whole stream.
	Truncated bool
	// SpillPath, when set, is a private file holding the whole stream (see
	// Request.SpillBytes). It outlives the run and the runtime: the caller removes it, and the
	// private directory it is in.
	SpillPath string
}

// CodeError is an uncaught exception or a syntax error, as the language reported it.
type CodeError struct {
	// Name is the exception's class: "ValueError", "SyntaxError", "TypeError".
	Name string `json:"name"`
	// Value is its message: "division by zero".
	Value string `json:"value"`
	// Traceback is the formatted traceback (Python) or stack (JavaScript), with file paths
	// relative to the run's private directory (main.py, main.js) and the runtime's own frames
	// left out.
	Traceback string `json:"traceback"`
}

// String formats the error as the language's last traceback line does: "Name: Value".
func (e *CodeError) String() string { return e.Name + ": " + e.Value }
