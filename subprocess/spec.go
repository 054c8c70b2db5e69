package subprocess

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/subkit/subkit/sandbox"
)

// Defaults applied to zero fields of a Spec.
const (
	DefaultGrace     = 3 * time.Second // Terminate's SIGTERM-to-SIGKILL grace and the drain grace
	DefaultTailBytes = 64000           // collect streams keep this many trailing bytes in memory
	// MaxTailBytes bounds Output.TailBytes and TTY.TailBytes: a tail is what a reader needs at
	// the end of a stream; the whole of a larger stream belongs in a spill file.
	MaxTailBytes = 64 << 20
	// DefaultCols and DefaultRows are the size of a terminal (Spec.TTY) that gives none.
	DefaultCols = 80
	DefaultRows = 24
)

// TTY wires a program to a terminal of its own: a pty whose other side is the program's
// stdin, stdout and stderr and its controlling terminal, the program leading a new session
// on it. Its zero value asks for a DefaultCols x DefaultRows terminal.
//
// The Handle reads the terminal as its Stdout stream, collected: ReadOutput(Stdout, ...),
// WaitOutput and Updated(Stdout) follow it in whole-stream byte coordinates, and the text is
// UTF-8 (a character split across reads is delivered whole, invalid bytes become U+FFFD, and
// a read neither starts nor ends inside a character). Input is typed with Handle.Write; the
// terminal methods (Resize, Foreground, SignalForeground) work on such a Handle only.
// Terminate ends everything the terminal started, by exact identity (see Handle.Terminate).
//
// Terminals exist on POSIX systems; elsewhere Spawn fails with ErrUnsupported (see the
// platform table in the README).
type TTY struct {
	// Cols and Rows are the terminal size; 0 means DefaultCols and DefaultRows. At most 65535.
	Cols, Rows int
	// TailBytes is how much of the terminal's output is kept in memory for ReadOutput; 0 means
	// DefaultTailBytes. At most MaxTailBytes.
	TailBytes int
}

// Disposition says what happens to an output stream.
type Disposition int

const (
	// Collect keeps a bounded in-memory tail of the stream and, when SpillBytes > 0, the whole
	// stream in a private spill file. It is the zero value, so a Spec that says nothing loses no
	// output.
	Collect Disposition = iota
	// Pipe hands the raw stream to the caller (Handle.Stdout / Handle.Stderr), who must read it.
	Pipe
	// Inherit connects the stream to this process's own stdout or stderr.
	Inherit
	// Discard sends the stream to the null device.
	Discard
)

func (d Disposition) String() string {
	switch d {
	case Collect:
		return "collect"
	case Pipe:
		return "pipe"
	case Inherit:
		return "inherit"
	case Discard:
		return "discard"
	}
	return fmt.Sprintf("Disposition(%d)", int(d))
}

// Output is the disposition of stdout or stderr.
type Output struct {
	Disposition Disposition
	// TailBytes is how many trailing bytes a Collect stream keeps in memory; 0 means
	// DefaultTailBytes. At most MaxTailBytes.
	TailBytes int
	// SpillBytes, when > 0, also appends the whole stream to a private spill file, for as long
	// as the stream is no larger than SpillBytes. The file is created only once the stream
	// outgrows the tail. A stream that outgrows SpillBytes loses its spill file (it would be
	// incomplete) and keeps only the tail, marked truncated.
	SpillBytes int64
	// Tee, when set, also gets every chunk of a Collect stream, in order, from a goroutine of
	// its own, so a slow or stuck Tee stalls the child at most TeeMaxStall: up to TeeBuffer
	// bytes (0 means DefaultTeeBuffer) wait for it, a chunk that finds no room waits up to
	// TeeMaxStall, and one that still finds none (and every chunk after it, until there is
	// room again) is not written to it but counted in StreamResult.TeeDropped. After a Write
	// error it gets nothing more (StreamResult.TeeErr). The result waits, within the drain
	// grace, for the Tee to have been written what was queued. The kit never closes it.
	Tee io.Writer
	// TeeBuffer bounds the bytes waiting for Tee; 0 means DefaultTeeBuffer.
	TeeBuffer int
}

// InputKind says where stdin comes from.
type InputKind int

const (
	// InputNull connects stdin to the null device: the zero value, so a child never reads this
	// process's stdin by accident.
	InputNull InputKind = iota
	// InputBytes writes Input.Data to the child's stdin and then closes it.
	InputBytes
	// InputPipe hands the write end of a pipe to the caller (Handle.Stdin).
	InputPipe
	// InputInherit connects stdin to this process's own stdin; only on explicit request.
	InputInherit
	// InputReader copies Input.Reader to the child's stdin until it ends (io.EOF), and then
	// closes the child's stdin. The kit does not close the Reader. The result does not wait for
	// a Read that never returns: the copy then goes on in one goroutine until it does.
	InputReader
)

// Input is the source of a child's stdin.
type Input struct {
	Kind   InputKind
	Data   []byte    // for InputBytes
	Reader io.Reader // for InputReader
}

// Spec describes one process tree to spawn. Zero fields take documented defaults; nothing is
// read from the host implicitly except the scrubbed environment and the Service's cwd.
type Spec struct {
	// Path is the program: an absolute path, a path with a separator (taken against Dir, or
	// the Service's Cwd when Dir is empty, as os/exec does), or a bare name searched in the
	// effective PATH (see Service.ResolveExecutable). It is also argv[0].
	Path string
	// Args are the arguments after argv[0].
	Args []string
	// Dir is the working directory; empty means the Service's Cwd. It must exist.
	Dir string
	// Env entries (NAME=VALUE) are merged over the Service's scrubbed environment and win,
	// including for PATH when resolving Path.
	Env []string
	// Stdin is the child's standard input; the zero value is the null device.
	Stdin Input
	// Stdout and Stderr are the output dispositions; the zero value collects a
	// DefaultTailBytes tail without a spill file.
	Stdout, Stderr Output
	// Grace is how long Terminate waits after SIGTERM before SIGKILL; 0 means DefaultGrace.
	Grace time.Duration
	// DrainGrace is how long collected streams may keep draining after the leader exits,
	// while descendants hold the pipes open; 0 means the same as Grace. A short one lets a
	// call that leaves a daemon behind (`server &`) return quickly.
	DrainGrace time.Duration
	// Sandbox, when set, confines this tree (see Config.Sandbox, which it overrides); nil
	// means Config.Sandbox, and with neither the tree runs unconfined.
	Sandbox *sandbox.Policy
	// Readable lists files and directories a confined program must read although the
	// sandbox makes their place private (the Service's runtime root lies in /tmp): the
	// caller's own files for it, such as a script or an rc file it wrote in RuntimeRoot. They
	// are shown read-only at their paths. Ignored for a tree that runs unconfined.
	Readable []string
	// SpillDir, when set, is where this tree's spill files go instead of the Service's: in a
	// private (0700) directory the Service makes in it the first time a stream needs one,
	// shared by every Spec that names the same SpillDir. It must be an absolute path. An
	// adapter on a shared Service uses it to keep its spill files under its own retention.
	SpillDir string
	// TTY, when set, runs the program on a terminal of its own (see TTY) instead of the
	// stdio above: Stdin, Stdout and Stderr must then be left zero (ErrInvalid otherwise).
	// Grace then also bounds each round of the terminal's cleanup.
	TTY *TTY
	// Timeout, when > 0, bounds the whole result: when the result has not settled that long
	// after Spawn (the leader still runs, or descendants still hold its pipes within
	// DrainGrace), the tree is terminated and the Result says TimedOut.
	Timeout time.Duration
}

func (o Output) check(name string) error {
	switch {
	case o.Disposition < Collect || o.Disposition > Discard:
		return invalid("spawn", name, fmt.Sprintf("unknown disposition %d", int(o.Disposition)))
	case o.TailBytes < 0:
		return invalid("spawn", name, fmt.Sprintf("TailBytes %d is negative; use 0 for the default", o.TailBytes))
	case o.TailBytes > MaxTailBytes:
		return invalid("spawn", name, fmt.Sprintf("TailBytes %d is above MaxTailBytes (%d); keep the whole stream with SpillBytes", o.TailBytes, MaxTailBytes))
	case o.SpillBytes < 0:
		return invalid("spawn", name, fmt.Sprintf("SpillBytes %d is negative; use 0 for no spill file", o.SpillBytes))
	case o.TeeBuffer < 0:
		return invalid("spawn", name, fmt.Sprintf("TeeBuffer %d is negative; use 0 for the default", o.TeeBuffer))
	case o.Disposition != Collect && (o.TailBytes != 0 || o.SpillBytes != 0 || o.Tee != nil || o.TeeBuffer != 0):
		return invalid("spawn", name, fmt.Sprintf("TailBytes, SpillBytes, Tee and TeeBuffer apply to collect, not %v", o.Disposition))
	}
	return nil
}

// checkArgs refuses arguments exec cannot pass.
func checkArgs(op string, args []string) error {
	for i, a := range args {
		if strings.IndexByte(a, 0) >= 0 {
			return invalid(op, "Args", fmt.Sprintf("argument %d contains a NUL byte, which exec cannot pass; send binary data through stdin", i))
		}
	}
	return nil
}

func (s *Spec) check() error {
	if err := checkArgs("spawn", s.Args); err != nil {
		return err
	}
	switch {
	case s.Path == "":
		return invalid("spawn", "Path", "no program given")
	case s.Grace < 0:
		return invalid("spawn", "Grace", fmt.Sprintf("%v is negative; use 0 for the default", s.Grace))
	case s.DrainGrace < 0:
		return invalid("spawn", "DrainGrace", fmt.Sprintf("%v is negative; use 0 for the same as Grace", s.DrainGrace))
	case s.SpillDir != "" && !filepath.IsAbs(s.SpillDir):
		return invalid("spawn", "SpillDir", fmt.Sprintf("%q is not an absolute path", s.SpillDir))
	case s.Timeout < 0:
		return invalid("spawn", "Timeout", fmt.Sprintf("%v is negative; use 0 for no timeout", s.Timeout))
	case s.Stdin.Kind < InputNull || s.Stdin.Kind > InputReader:
		return invalid("spawn", "Stdin", fmt.Sprintf("unknown input kind %d", int(s.Stdin.Kind)))
	case s.Stdin.Kind != InputBytes && s.Stdin.Data != nil:
		return invalid("spawn", "Stdin", "Data is set but Kind is not InputBytes")
	case s.Stdin.Kind != InputReader && s.Stdin.Reader != nil:
		return invalid("spawn", "Stdin", "Reader is set but Kind is not InputReader")
	case s.Stdin.Kind == InputReader && s.Stdin.Reader == nil:
		return invalid("spawn", "Stdin", "Kind is InputReader but Reader is nil")
	}
	if s.TTY != nil {
		if err := s.TTY.check(s); err != nil {
			return err
		}
	}
	if err := s.Stdout.check("Stdout"); err != nil {
		return err
	}
	if err := s.Stderr.check("Stderr"); err != nil {
		return err
	}
	return checkEnv(s.Env)
}

func (t *TTY) check(s *Spec) error {
	in, out, errOut := s.Stdin, s.Stdout, s.Stderr
	switch {
	case in.Kind != InputNull || in.Data != nil || in.Reader != nil:
		return invalid("spawn", "Stdin", "a program on a terminal (Spec.TTY) reads the terminal: leave Stdin zero and type with Handle.Write")
	case !zeroOutput(out):
		return invalid("spawn", "Stdout", "a program on a terminal (Spec.TTY) writes the terminal: leave Stdout zero (TTY.TailBytes sizes what is kept)")
	case !zeroOutput(errOut):
		return invalid("spawn", "Stderr", "a program on a terminal (Spec.TTY) writes the terminal: leave Stderr zero")
	case t.Cols < 0 || t.Rows < 0 || t.Cols > 0xffff || t.Rows > 0xffff:
		return invalid("spawn", "TTY", fmt.Sprintf("size %dx%d is out of range 0..65535", t.Cols, t.Rows))
	case t.TailBytes < 0:
		return invalid("spawn", "TTY.TailBytes", fmt.Sprintf("%d is negative; use 0 for the default", t.TailBytes))
	case t.TailBytes > MaxTailBytes:
		return invalid("spawn", "TTY.TailBytes", fmt.Sprintf("%d is above MaxTailBytes (%d)", t.TailBytes, MaxTailBytes))
	}
	return nil
}

// zeroOutput reports whether o is Output's zero value (without comparing a Tee, whose
// dynamic type may not be comparable).
func zeroOutput(o Output) bool {
	return o.Disposition == Collect && o.TailBytes == 0 && o.SpillBytes == 0 && o.Tee == nil && o.TeeBuffer == 0
}
