package subprocess

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/subkit/subkit/internal/utf8bridge"
	"github.com/subkit/subkit/procinspect"
)

// Foreground is a terminal's foreground process group at one moment.
type Foreground struct {
	Pgid int
	// Procs are the group's live members within the tree rooted at the terminal's program,
	// as exact identities.
	Procs []procinspect.Proc
}

// noTTY is the error of a terminal method called on a Handle without a terminal.
func (h *Handle) noTTY(op string) error {
	if h.tty != nil {
		return nil
	}
	return &Error{Op: op, Name: h.argv[0], Kind: ErrInvalid, Err: errors.New("the Handle has no terminal"),
		Hint: "spawn with Spec.TTY set to run a program on a terminal"}
}

// Write types p on the terminal (Spec.TTY), as a user at its keyboard would. On a Handle
// without a terminal it fails with ErrInvalid: a pipe's stdin is Handle.Stdin.
func (h *Handle) Write(p []byte) (int, error) {
	if err := h.valid("write terminal"); err != nil {
		return 0, err
	}
	if err := h.noTTY("write terminal"); err != nil {
		return 0, err
	}
	n, err := h.tty.write(p)
	if err != nil {
		return n, &Error{Op: "write terminal", Name: h.argv[0], Err: err}
	}
	return n, nil
}

// Resize changes the size of the terminal (Spec.TTY); its foreground program gets SIGWINCH.
// A size out of 1..65535, or a Handle without a terminal, is ErrInvalid.
func (h *Handle) Resize(cols, rows int) error {
	if err := h.valid("resize terminal"); err != nil {
		return err
	}
	if err := h.noTTY("resize terminal"); err != nil {
		return err
	}
	if cols <= 0 || rows <= 0 || cols > 0xffff || rows > 0xffff {
		return invalid("resize terminal", h.argv[0], fmt.Sprintf("size %dx%d is out of range 1..65535", cols, rows))
	}
	if err := h.tty.resize(cols, rows); err != nil {
		return &Error{Op: "resize terminal", Name: h.argv[0], Err: err}
	}
	return nil
}

// Foreground reports the terminal's foreground process group (Spec.TTY) and its members
// within the tree rooted at the program. Every tree member it sees is remembered, so
// Terminate can still end it after it re-parents. Once the program has exited the terminal
// has no foreground group, and Foreground fails. A Handle without a terminal is ErrInvalid.
func (h *Handle) Foreground(ctx context.Context) (Foreground, error) {
	if err := h.valid("foreground"); err != nil {
		return Foreground{}, err
	}
	if err := checkCtx("foreground", h.argv[0], ctx); err != nil {
		return Foreground{}, err
	}
	if err := h.noTTY("foreground"); err != nil {
		return Foreground{}, err
	}
	return h.tty.foreground(ctx, h.argv[0])
}

// SignalForeground sends sig to the members of the terminal's foreground group (Ctrl-C is
// SIGINT), each by exact identity; the program itself is signalled only when it is in the
// foreground. A signal this OS does not have, or a Handle without a terminal, is ErrInvalid.
func (h *Handle) SignalForeground(ctx context.Context, sig os.Signal) error {
	if err := h.valid("signal foreground"); err != nil {
		return err
	}
	if err := checkCtx("signal foreground", h.argv[0], ctx); err != nil {
		return err
	}
	if err := h.noTTY("signal foreground"); err != nil {
		return err
	}
	if sig == nil {
		return invalid("signal foreground", h.argv[0], "no signal given")
	}
	return h.tty.signalForeground(ctx, h.argv[0], sig)
}

// Identity is the leader's exact identity (pid and start time). A Handle with a terminal
// records it at Spawn, and its cleanup signals nothing whose start time differs; for other
// Handles only Pid is set (their process group is kept safe to signal by the unreaped leader
// instead). A Handle not made by Spawn gives the zero Identity.
func (h *Handle) Identity() procinspect.Identity {
	if h.valid("identity") != nil {
		return procinspect.Identity{}
	}
	if h.tty != nil {
		return h.tty.shell
	}
	return procinspect.Identity{Pid: h.pid}
}

// readText is ReadOutput of a terminal's output: the same read, moved to character
// boundaries. A read that begins inside a character skips its rest (counted as Dropped); one
// cut by max ends before a character the cut would split, so Next is always a boundary; a max
// below utf8.UTFMax is taken as utf8.UTFMax, so a read can always return a whole character.
func readText(c *collector, from int64, max int) (Delta, error) {
	if max > 0 && max < utf8.UTFMax {
		max = utf8.UTFMax
	}
	d, err := c.read(from, max)
	if err != nil {
		return d, err
	}
	if rest := utf8bridge.TrimStart(d.Data); len(rest) < len(d.Data) { // begun inside a character: skip its rest
		n := int64(len(d.Data) - len(rest))
		d.Data, d.From, d.Dropped = rest, d.From+n, d.Dropped+n
	}
	if d.Next < d.Total { // cut by max: end before a character the cut would split
		d.Data = d.Data[:utf8bridge.WholeLen(d.Data)]
	}
	d.Next = d.From + int64(len(d.Data))
	d.Done = d.Done && d.Next == d.Total
	return d, nil
}

// survivorsError is the error of a terminal's Terminate that left the processes left alive
// after SIGKILL, joined with err, the failure of a signal or a look at the process table, if
// any.
func survivorsError(name string, left []procinspect.Identity, err error) *Error {
	ids := make([]string, len(left))
	for i, id := range left {
		ids[i] = id.String()
	}
	cause := fmt.Errorf("%d processes survived SIGKILL: %s", len(left), strings.Join(ids, ", "))
	return &Error{Op: "terminate", Name: name, Kind: ErrSystem, Err: errors.Join(cause, err), Survivors: left,
		Hint: "a process in uninterruptible sleep ends once its I/O completes; WaitForExit tells when the tree is gone"}
}
