package bash

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/subkit/subkit/subprocess"

	"github.com/subkit/subkit/internal/termtext"
	"github.com/subkit/subkit/internal/utf8bridge"
)

// Render turns the outcome of Exec into the text a model sees: stdout, then stderr under a
// "[stderr]" line, each as a terminal would show it (the kit's one rendering, internal/termtext,
// exported as shell.Render: "\r" redraws collapsed, escape sequences dropped, other control
// bytes as control pictures, invalid UTF-8 as U+FFFD; Result keeps the raw bytes), each tail
// preceded by a truncation notice naming the spill file and how to read it, then the exit
// status and what was left running. Everything Render adds is on lines of its own in square
// brackets.
//
// A non-nil err means the command never ran, and the text says so in words that cannot be
// mistaken for the command's own failure: "[request refused: ...]" for a bad request or a
// full executor, "[tool failure: ...]" for trouble in the executor itself.
func Render(res Result, err error) string {
	if err != nil {
		return renderError(err)
	}
	var b strings.Builder
	wrote := renderStream(&b, "stdout", res.Stdout, false)
	wrote = renderStream(&b, "stderr", res.Stderr, true) || wrote
	if !wrote {
		b.WriteString("(no output)\n")
	}
	renderStatus(&b, res)
	return b.String()
}

func renderError(err error) string {
	switch {
	case errors.Is(err, ErrTooMany), errors.Is(err, ErrInvalid):
		return "[request refused, the command did not run: " + err.Error() + "]\n"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "[cancelled before it started, the command did not run: " + err.Error() + "]\n"
	case errors.Is(err, ErrClosed):
		return "[tool failure, not a failure of the command: the bash executor has been shut down; the command did not run]\n"
	}
	return "[tool failure, not a failure of the command: the command could not be run: " + err.Error() + "]\n"
}

// renderStream writes one stream's tail; the stderr section has a header line. It reports
// whether it wrote anything.
func renderStream(b *strings.Builder, name string, s subprocess.StreamResult, header bool) bool {
	if s.TotalBytes == 0 {
		return false
	}
	if header {
		b.WriteString("[stderr]\n")
	}
	tail := s.Tail
	if s.Truncated {
		tail = utf8bridge.TrimStart(tail) // a character cut in two
		fmt.Fprintf(b, "[%s truncated: only its last %s of %s are shown below", name, bytesText(int64(len(tail))), bytesText(s.TotalBytes))
		switch {
		case s.SpillPath != "":
			fmt.Fprintf(b, "; the whole %s is in the file %s. Read parts of it with a command such as "+
				"`sed -n '1,200p' FILE`, `grep -n PATTERN FILE` or `tail -c 20000 FILE`]\n", name, s.SpillPath)
		case s.SpillErr != nil:
			fmt.Fprintf(b, "; the file meant to keep the whole %s was lost (tool failure: %v)]\n", name, s.SpillErr)
		default:
			fmt.Fprintf(b, "; the earlier output was too large to keep (over maxSpillBytes)]\n")
		}
	}
	b.WriteString(termtext.Lines(tail))
	return true
}

func renderStatus(b *strings.Builder, r Result) {
	switch {
	case r.TimedOut:
		fmt.Fprintf(b, "[timed out after %v: the command and every process it started were terminated", r.Timeout)
		if r.Signal != "" {
			fmt.Fprintf(b, " (the shell ended by %s)", r.Signal)
		}
		b.WriteString("]\n")
	case r.Cancelled:
		b.WriteString("[cancelled: the command and every process it started were terminated")
		if r.Signal != "" {
			fmt.Fprintf(b, " (the shell ended by %s)", r.Signal)
		} else {
			fmt.Fprintf(b, " (the shell exited with code %d)", r.ExitCode)
		}
		b.WriteString("]\n")
	case r.Signal != "":
		fmt.Fprintf(b, "[killed by signal %s]\n", r.Signal)
	default:
		fmt.Fprintf(b, "[exit code %d]\n", r.ExitCode)
	}
	if r.PipesHeld {
		b.WriteString("[a process the command started kept the output open after the shell exited; output it wrote later is not shown]\n")
	}
	if r.Lingering {
		renderSurvivors(b, r)
	}
	if r.Sandbox != nil && !r.Success() && !r.Cancelled && !r.TimedOut {
		code := r.ExitCode
		if n, ok := map[string]int{"SIGXCPU": 24, "SIGXFSZ": 25}[r.Signal]; ok {
			code = 128 + n // the limits' signals, as a shell reports them
		}
		if line := r.Sandbox.LikelyDenial(r.Stderr.Tail, code); line != "" {
			fmt.Fprintf(b, "[%s (%s backend)]\n", line, r.Sandbox.Backend)
		}
	}
}

func renderSurvivors(b *strings.Builder, r Result) {
	if len(r.Survivors) == 0 {
		fmt.Fprintf(b, "[processes the command started are still running in the background (they could not be listed: %v); "+
			"they run until they exit or the executor shuts down]\n", r.SurvivorsErr)
		return
	}
	names := make([]string, len(r.Survivors))
	pids := make([]string, len(r.Survivors))
	for i, p := range r.Survivors {
		names[i] = fmt.Sprintf("pid %d (%s)", p.Pid, p.Comm)
		pids[i] = strconv.Itoa(p.Pid)
	}
	noun := "processes the command started are"
	if len(r.Survivors) == 1 {
		noun = "process the command started is"
	}
	fmt.Fprintf(b, "[%d %s still running in the background: %s. They run until they exit or the executor shuts down; stop them with `kill %s`]\n",
		len(r.Survivors), noun, strings.Join(names, ", "), strings.Join(pids, " "))
}

// RenderDelta turns an offset read of a background process into the text a model sees: the
// new stdout, the new stderr under a "[stderr]" line, a notice for bytes no longer
// available, and a last line saying whether the process still runs and which offsets to read
// from next; once it has ended, its exit status as Render words it. A read that found nothing
// new while the process runs is one short line: the offsets to read from are the ones just
// read from.
func RenderDelta(d Delta) string {
	var b strings.Builder
	wrote := renderDeltaStream(&b, "stdout", d.Stdout, false)
	wrote = renderDeltaStream(&b, "stderr", d.Stderr, true) || wrote
	if !wrote && d.Result == nil {
		return fmt.Sprintf("[no new output; background process %d is still running]\n", d.Pid)
	}
	next := fmt.Sprintf("stdout offset %d, stderr offset %d", d.Next.Stdout, d.Next.Stderr)
	switch {
	case d.Result == nil:
		fmt.Fprintf(&b, "[background process %d is still running; read new output from %s]\n", d.Pid, next)
	case !d.Done():
		fmt.Fprintf(&b, "[background process %d has ended; more output remains from %s]\n", d.Pid, next)
		renderStatus(&b, *d.Result)
	default:
		fmt.Fprintf(&b, "[background process %d has ended; all output has been read]\n", d.Pid)
		renderStatus(&b, *d.Result)
	}
	return b.String()
}

func renderDeltaStream(b *strings.Builder, name string, d subprocess.Delta, header bool) bool {
	if len(d.Data) == 0 && d.Dropped == 0 {
		return false
	}
	if header {
		b.WriteString("[stderr]\n")
	}
	data := d.Data
	if d.Dropped > 0 {
		data = utf8bridge.TrimStart(data)
		fmt.Fprintf(b, "[%s of %s before offset %d are no longer available]\n", bytesText(d.Dropped), name, d.From)
	}
	b.WriteString(termtext.Lines(data))
	return true
}

func bytesText(n int64) string {
	if n == 1 {
		return "1 byte"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
