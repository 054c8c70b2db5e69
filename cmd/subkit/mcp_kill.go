package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subkit/subkit/procinspect"
)

// killSignals are the signals process_kill may start with; SIGKILL ends at once.
var killSignals = []string{"SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT", "SIGKILL"}

type processKillIn struct {
	Pid     int    `json:"pid" jsonschema:"the process to end, as process_tree lists it"`
	Start   uint64 `json:"start" jsonschema:"its start token, as process_tree lists it: pid and start name the process exactly, so a pid reused since is refused, never signalled"`
	Signal  string `json:"signal,omitempty" jsonschema:"the signal sent first: SIGTERM (default), SIGINT, SIGHUP or SIGQUIT, then SIGKILL if the process has not exited within grace_ms; SIGKILL ends it at once"`
	GraceMs int64  `json:"grace_ms,omitempty" jsonschema:"how long the process gets to exit after the first signal before SIGKILL (default: the configuration's graceMs, 3000; at most 600000)"`
}

// The outcomes of process_kill.
const (
	killEnded    = "ended"     // signalled, and gone
	killGone     = "gone"      // already gone (or a zombie): nothing was signalled
	killNotEnded = "not_ended" // signalled or not, it is still there
)

type processKillOut struct {
	Pid     int    `json:"pid"`
	Start   uint64 `json:"start"`
	Comm    string `json:"comm" jsonschema:"the command name"`
	Outcome string `json:"outcome" jsonschema:"ended: it exited after a signal; gone: it had exited already and nothing was signalled; not_ended: it could not be ended (reason says why)"`
	Signal  string `json:"signal" jsonschema:"the last signal sent before it was gone (SIGTERM, SIGKILL, ...); empty when none was sent"`
	Reason  string `json:"reason,omitempty" jsonschema:"why it was not ended, when outcome is not_ended"`
}

func (s *mcpServer) addKillTools(server *mcp.Server) {
	addTool(s, server, &mcp.Tool{Name: "process_kill", Title: "End one process of this server's tree",
		Description: "Ends one process that this server's tools started (a command's child, a background job's server, an " +
			"interpreter), named by the pid and start token process_tree shows: the signal (default SIGTERM), up to grace_ms " +
			"for it to exit, then SIGKILL. Only that process is signalled, not its group or children (end them in turn, or " +
			"the whole command with bash_stop, shell_interrupt or shell_close). " +
			"Refused for a pid whose start token differs (the process exited and the pid was reused), and for anything " +
			"outside this server's tree: the server itself, pid 1, other programs and users. POSIX only.",
		Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true)},
	}, func(w *mcpWorld, ctx context.Context, _ *mcp.CallToolRequest, in processKillIn) (string, processKillOut, error) {
		return w.processKillTool(ctx, in)
	})
}

func (w *mcpWorld) processKillTool(ctx context.Context, in processKillIn) (string, processKillOut, error) {
	refuse := func(format string, a ...any) (string, processKillOut, error) {
		return "", processKillOut{}, fmt.Errorf("[request refused, nothing was signalled: "+format+"]", a...)
	}
	self := os.Getpid()
	switch {
	case in.Pid <= 0:
		return refuse("pid %d is not a process id; give the pid and start of a process process_tree lists", in.Pid)
	case in.Pid == self:
		return refuse("pid %d is this server; it ends when the client leaves, and what it started ends with it", in.Pid)
	case in.Start == 0:
		return refuse("start is missing; give the start token process_tree lists for pid %d", in.Pid)
	}
	sig := strings.ToUpper(in.Signal)
	switch {
	case sig == "":
		sig = "SIGTERM"
	case !strings.HasPrefix(sig, "SIG"):
		sig = "SIG" + sig
	}
	if !slices.Contains(killSignals, sig) {
		return refuse("signal %q is not one of %s", in.Signal, strings.Join(killSignals, ", "))
	}
	grace, err := millis("grace_ms", in.GraceMs, w.s.execCfg.Grace, mcpMaxWait)
	if err != nil {
		return refuse("%v", err)
	}

	tab, err := procinspect.Snapshot(ctx)
	if err != nil {
		if errors.Is(err, procinspect.ErrUnsupported) {
			return "", processKillOut{}, fmt.Errorf("[unsupported here: %v]", err)
		}
		return "", processKillOut{}, fmt.Errorf("[tool failure: reading the process table: %v]", err)
	}
	id := procinspect.Identity{Pid: in.Pid, Start: in.Start}
	out := processKillOut{Pid: in.Pid, Start: in.Start}
	p, ok := tab.Get(in.Pid)
	switch {
	case !ok:
		out.Outcome = killGone
		return fmt.Sprintf("[process %d has exited already: nothing was signalled]\n", in.Pid), out, nil
	case p.Start != in.Start:
		return refuse("pid %d now names another process (%s, start %d), not the one that started at %d: that one has "+
			"exited and its pid was reused; run process_tree again", in.Pid, p.Comm, p.Start, in.Start)
	}
	out.Comm = p.Comm
	me, ok := tab.Get(self)
	if !ok || !slices.ContainsFunc(tab.Descendants(me.Identity), func(q procinspect.Proc) bool { return q.Identity == id }) {
		what := "is not one this server started"
		if in.Pid == 1 {
			what = "is the system's init, which this server did not start"
		}
		return refuse("process %d (%s) %s: process_kill ends only processes in this server's tree (process_tree without a "+
			"pid lists them); end a background command with bash_stop, a shell's command with shell_interrupt", in.Pid, p.Comm, what)
	}
	if p.Zombie {
		out.Outcome = killGone
		return fmt.Sprintf("[process %d (%s) has exited already (it waits to be reaped): nothing was signalled]\n", in.Pid, p.Comm), out, nil
	}
	if helper, err := kitHelper(ctx, in.Pid); err != nil {
		return "", processKillOut{}, fmt.Errorf("[tool failure: could not tell whether process %d is the kit's own: %v]", in.Pid, err)
	} else if helper {
		return refuse("process %d (%s) is subkit's guard, which holds every process the server runs; it ends with the "+
			"server. End a command with bash_stop or shell_interrupt, or a process it started by its own pid", in.Pid, p.Comm)
	}

	e, err := endProcess(ctx, id, sig, grace)
	if err != nil {
		if errors.Is(err, errKillUnsupported) {
			return "", processKillOut{}, fmt.Errorf("[unsupported here: %v]", err)
		}
		if ctx.Err() != nil {
			return "", processKillOut{}, fmt.Errorf("[cancelled: process %d (%s) may still run: %v]", in.Pid, p.Comm, err)
		}
	}
	out.Signal = e.last
	var text string
	switch {
	case err != nil:
		out.Outcome, out.Reason = killNotEnded, e.reason(err)
		text = fmt.Sprintf("[process %d (%s) could not be ended: %s]\n", in.Pid, p.Comm, out.Reason)
	case e.last == "":
		out.Outcome = killGone
		text = fmt.Sprintf("[process %d (%s) exited before it was signalled: nothing was signalled]\n", in.Pid, p.Comm)
	case e.last == "SIGKILL" && sig != "SIGKILL": // the grace ran out and the SIGKILL reached it
		out.Outcome = killEnded
		text = fmt.Sprintf("[process %d (%s) did not exit within %v of %s; ended by SIGKILL]\n", in.Pid, p.Comm, grace, sig)
	default:
		out.Outcome = killEnded
		text = fmt.Sprintf("[process %d (%s) ended by %s]\n", in.Pid, p.Comm, e.last)
	}
	return text, out, nil
}

// ended is what endProcess did: the last signal that reached the process ("" for none).
type ended struct {
	last string
}

// reason words the error of an ending that failed.
func (e ended) reason(err error) string {
	switch {
	case errors.Is(err, os.ErrPermission):
		return "permission denied: it runs as another user, or under a program that changed its privileges (" + err.Error() + ")"
	case errors.Is(err, errStillPresent):
		return "it is still there after SIGKILL (a process in uninterruptible sleep, usually waiting on a device or a " +
			"network file system, ends once that wait does): " + err.Error()
	}
	return err.Error()
}
