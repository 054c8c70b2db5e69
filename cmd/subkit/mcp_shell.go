package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subkit/subkit/shell"
)

type shellOpenIn struct{}

type shellInfoOut struct {
	ID       string `json:"id" jsonschema:"the session's id, for the other shell_ tools"`
	Pid      int    `json:"pid" jsonschema:"the shell's pid"`
	State    string `json:"state" jsonschema:"completed (at its prompt), waiting_for_input (the foreground program reads the terminal), running (a command still runs) or exited"`
	Command  string `json:"command" jsonschema:"the last command"`
	ExitCode *int   `json:"exit_code" jsonschema:"the last command's status (the shell's once it exited); null while running"`
	Cwd      string `json:"cwd" jsonschema:"the shell's working directory at its last prompt"`
	IdleMs   int64  `json:"idle_ms" jsonschema:"milliseconds since the session was last used"`
	// TranscriptPath is where the session's whole transcript is, on the server's machine.
	TranscriptPath string `json:"transcript_path,omitempty" jsonschema:"the file holding the session's whole transcript (its first 64 MiB) on the server's machine, while the session is open; shell_read reads it by offset"`
}

// shellInfoOf is in as a client sees it, under its id for the session.
func shellInfoOf(id string, in shell.Info) shellInfoOut {
	out := shellInfoOut{ID: id, Pid: in.Pid, State: string(in.State), Command: in.Command, Cwd: in.Cwd, IdleMs: in.Idle.Milliseconds(),
		TranscriptPath: in.TranscriptPath}
	if in.State != shell.StateRunning && in.ExitCode >= 0 {
		code := in.ExitCode
		out.ExitCode = &code
	}
	return out
}

type shellRunIn struct {
	ID      string `json:"id" jsonschema:"the id shell_open returned"`
	Command string `json:"command" jsonschema:"a command line, run in the session's shell as if typed: cd, exports, functions and an activated virtualenv stay for the next command"`
	YieldMs int64  `json:"yield_ms,omitempty" jsonschema:"wait at most this many milliseconds for the command to finish (default 10000, at most 600000); a command still running then goes on, and the result says running"`
}

type shellWriteIn struct {
	ID      string `json:"id" jsonschema:"the id shell_open returned"`
	Chars   string `json:"chars" jsonschema:"characters typed to the program in the terminal's foreground (a REPL, a prompt); end a line with \\n"`
	YieldMs int64  `json:"yield_ms,omitempty" jsonschema:"wait at most this many milliseconds for the foreground program to finish (default 10000)"`
}

type shellWaitIn struct {
	ID      string `json:"id" jsonschema:"the id shell_open returned"`
	YieldMs int64  `json:"yield_ms,omitempty" jsonschema:"wait at most this many milliseconds for the command to finish (default 10000, at most 600000)"`
}

type shellIDIn struct {
	ID string `json:"id" jsonschema:"the id shell_open returned"`
}

// shellStepOut is one step of a shell session: a step of subkit shell, and the shell tools'
// result.
type shellStepOut struct {
	ID            string      `json:"id,omitempty" jsonschema:"the shell session's id"`
	State         string      `json:"state" jsonschema:"completed: the shell is back at its prompt; waiting_for_input: the program in the foreground is blocked reading the terminal (a prompt, a REPL, a password: see input); running: the command (or a program it runs in the foreground) still runs; exited: the shell has ended"`
	Command       string      `json:"command" jsonschema:"the command this step is about (subkit shell: the script's line)"`
	Output        string      `json:"output" jsonschema:"the output since the previous step, as a terminal shows it; its head and tail when long, with a mark of what was left out"`
	Omitted       int64       `json:"omitted" jsonschema:"bytes of output left out between the head and the tail"`
	OmittedFrom   int64       `json:"omitted_from" jsonschema:"the transcript offset of the first omitted byte: shell_read with this offset reads them"`
	From          int64       `json:"from" jsonschema:"the transcript offset where this step's output starts"`
	Next          int64       `json:"next" jsonschema:"the transcript offset where the next step's output starts"`
	ExitCode      *int        `json:"exit_code" jsonschema:"completed: the command's status; exited: the shell's; null while running or when a signal ended the shell"`
	Signal        string      `json:"signal" jsonschema:"the signal that ended the shell, or empty"`
	Cwd           string      `json:"cwd" jsonschema:"the shell's working directory at its last prompt"`
	DurationMs    int64       `json:"duration_ms" jsonschema:"how long the command ran, or has run so far"`
	Foreground    string      `json:"foreground" jsonschema:"while running: the command name of the terminal's foreground program (python3, sleep; bash for the shell itself)"`
	ForegroundPid int         `json:"foreground_pid"`
	Input         *shellInput `json:"input,omitempty" jsonschema:"waiting_for_input: who reads the terminal, how it takes input, and the prompt"`
	Screen        string      `json:"screen,omitempty" jsonschema:"the screen of a full-screen program (vim, less, top, watch) as a person would see it, trailing blanks trimmed; its bytes are not in output"`
	Notes         []string    `json:"notes" jsonschema:"short remarks: set -e stopped the command, PROMPT_COMMAND was put back, output was lost"`
	Cancelled     bool        `json:"cancelled" jsonschema:"the client cancelled the call: the foreground program was sent Ctrl-C (SIGINT)"`
}

func shellStepOf(id string, st shell.Step) shellStepOut {
	out := shellStepOut{ID: id, State: string(st.State), Command: st.Command, Output: st.Output, Omitted: st.Omitted,
		OmittedFrom: st.OmittedFrom, From: st.From, Next: st.Next,
		Signal: st.Signal, Cwd: st.Cwd, DurationMs: st.Duration.Milliseconds(), Foreground: st.Foreground,
		ForegroundPid: st.ForegroundPid, Notes: nonNil(st.Notes)}
	out.Input, out.Screen = shellInputOf(st.Input), st.Screen
	if st.State != shell.StateRunning && st.State != shell.StateWaitingInput && st.ExitCode >= 0 {
		code := st.ExitCode
		out.ExitCode = &code
	}
	return out
}

// renderStep is a step as a model reads it: the output, the notes, one status line.
func renderStep(st shellStepOut) string {
	var b strings.Builder
	b.WriteString(st.Output)
	if st.Output != "" && !strings.HasSuffix(st.Output, "\n") {
		b.WriteString("\n")
	}
	b.WriteString(screenText(st.Screen))
	for _, n := range st.Notes {
		b.WriteString("[note: " + n + "]\n")
	}
	if st.Omitted > 0 {
		fmt.Fprintf(&b, "[%d bytes were left out of the middle; shell_read {\"id\":%q,\"offset\":%d} reads them]\n", st.Omitted, st.ID, st.OmittedFrom)
	}
	if st.Cancelled {
		b.WriteString("[cancelled: Ctrl-C (SIGINT) was sent to the foreground program]\n")
	}
	d := (time.Duration(st.DurationMs) * time.Millisecond).Round(time.Millisecond)
	switch st.State {
	case string(shell.StateCompleted):
		code := -1
		if st.ExitCode != nil {
			code = *st.ExitCode
		}
		fmt.Fprintf(&b, "[exit code %d; cwd %s]\n", code, st.Cwd)
	case string(shell.StateWaitingInput):
		b.WriteString(waitingLine(st.Input, "; shell_write types into it, shell_interrupt sends Ctrl-C, shell_terminate ends it"))
	case string(shell.StateRunning):
		fmt.Fprintf(&b, "[still running after %v: %s (pid %d) holds the terminal; shell_poll waits for it, shell_write types into it, shell_interrupt sends Ctrl-C, shell_terminate ends it]\n",
			d, st.Foreground, st.ForegroundPid)
	case string(shell.StateExited):
		if st.ExitCode != nil {
			fmt.Fprintf(&b, "[the shell exited with status %d; open a new session with shell_open]\n", *st.ExitCode)
		} else {
			fmt.Fprintf(&b, "[the shell was ended by %s; open a new session with shell_open]\n", st.Signal)
		}
	}
	return b.String()
}

// shellError is the tool error of a shell call whose input was not sent.
func shellError(id string, err error) error {
	var se *shell.SyntaxError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("[syntax error, nothing ran: %s]", strings.TrimSpace(se.Message))
	case id != "" && errors.Is(err, shell.ErrNotFound):
		return fmt.Errorf("[request refused: no shell session %q; open one with shell_open (shell_list lists them)]", id)
	case errors.Is(err, shell.ErrBusy):
		return fmt.Errorf("[request refused, nothing was sent: a command is still running in session %s; shell_poll waits for it, "+
			"shell_write types into it, shell_interrupt sends Ctrl-C]", id)
	case errors.Is(err, shell.ErrUnsupported):
		return fmt.Errorf("[unsupported here: %v]", err)
	case errors.Is(err, shell.ErrInvalid), errors.Is(err, shell.ErrExited):
		return fmt.Errorf("[request refused: %v]", err)
	}
	return fmt.Errorf("[tool failure: %v]", err)
}

func (s *mcpServer) addShellTools(server *mcp.Server) {
	ceiling := mcpShare * shell.DefaultMaxSessions
	addTool(s, server, &mcp.Tool{Name: "shell_open", Title: "Open a shell session",
		Description: "Opens a stateful shell session: an interactive bash on a terminal of its own, in the model-friendly " +
			"environment of the bash tool, whose cwd, variables, functions and activated virtualenvs stay from one command to " +
			"the next. Returns its id. At most 64 are open; one more closes the least recently used.",
	}, func(w *mcpWorld, ctx context.Context, _ *mcp.CallToolRequest, _ shellOpenIn) (string, shellInfoOut, error) {
		if len(w.shells.List()) < shell.DefaultMaxSessions { // at its limit a client's Open prunes one of its own
			release, err := s.admit("shell sessions open", ceiling, func(x *mcpWorld) int { return len(x.shells.List()) })
			if err != nil {
				return "", shellInfoOut{}, err
			}
			defer release()
		}
		sess, err := w.shells.Open(ctx)
		if err != nil {
			return "", shellInfoOut{}, shellError("", err)
		}
		info := shellInfoOf(sess.ID(), sess.Info())
		text := fmt.Sprintf("[opened shell session %s (pid %d) in %s; run commands with shell_run {\"id\":%q,\"command\":...}]\n",
			info.ID, info.Pid, info.Cwd, info.ID)
		if info.TranscriptPath != "" {
			text += fmt.Sprintf("[its whole transcript goes to %s; shell_read reads it by offset]\n", info.TranscriptPath)
		}
		return text, info, nil
	})
	addTool(s, server, &mcp.Tool{Name: "shell_run", Title: "Run a command in a shell session",
		Description: "Runs a command line in a shell session and waits until it finishes, waits for input, or yield_ms passes; " +
			"returns the new output and the state: completed (exit code, cwd), waiting_for_input (a prompt, a REPL or a password " +
			"prompt reads the terminal: answer with shell_write), running (what holds the terminal), or exited.",
	}, func(w *mcpWorld, ctx context.Context, req *mcp.CallToolRequest, in shellRunIn) (string, shellStepOut, error) {
		return w.shellStep(ctx, req, in.ID, in.YieldMs, "shell_run", func(ctx context.Context, sess *shell.Session, y time.Duration) (shell.Step, error) {
			return sess.Run(ctx, in.Command, y)
		})
	})
	addTool(s, server, &mcp.Tool{Name: "shell_write", Title: "Type into a shell session",
		Description: "Types characters to whatever holds a session's terminal (a REPL, a prompt, the shell itself) and waits " +
			"until the foreground program finishes, waits for input again (a REPL's next prompt: milliseconds after its answer), or yield_ms passes.",
	}, func(w *mcpWorld, ctx context.Context, req *mcp.CallToolRequest, in shellWriteIn) (string, shellStepOut, error) {
		return w.shellStep(ctx, req, in.ID, in.YieldMs, "shell_write", func(ctx context.Context, sess *shell.Session, y time.Duration) (shell.Step, error) {
			return sess.Write(ctx, in.Chars, y)
		})
	})
	addTool(s, server, &mcp.Tool{Name: "shell_poll", Title: "Wait on a shell session",
		Description: "Waits until a session's running command finishes, waits for input, or yield_ms passes, and returns the new output and state.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(w *mcpWorld, ctx context.Context, req *mcp.CallToolRequest, in shellWaitIn) (string, shellStepOut, error) {
		return w.shellStep(ctx, req, in.ID, in.YieldMs, "shell_poll", func(ctx context.Context, sess *shell.Session, y time.Duration) (shell.Step, error) {
			return sess.Poll(ctx, y)
		})
	})
	addTool(s, server, &mcp.Tool{Name: "shell_interrupt", Title: "Interrupt a shell session",
		Description: "Sends Ctrl-C (SIGINT) to the program in a session's foreground and waits up to yield_ms for the shell's prompt.",
	}, func(w *mcpWorld, ctx context.Context, req *mcp.CallToolRequest, in shellWaitIn) (string, shellStepOut, error) {
		return w.shellStep(ctx, req, in.ID, in.YieldMs, "shell_interrupt", func(ctx context.Context, sess *shell.Session, y time.Duration) (shell.Step, error) {
			return sess.Interrupt(ctx, y)
		})
	})
	addTool(s, server, &mcp.Tool{Name: "shell_terminate", Title: "End the foreground program of a shell session",
		Description: "Ends the program in a session's foreground, for one that ignores Ctrl-C: SIGTERM to its process group, " +
			"3 s of grace, then SIGKILL, and the shell stays (the shell itself, in a loop of its own, gets Ctrl-C only). " +
			"Waits up to yield_ms for the prompt.",
	}, func(w *mcpWorld, ctx context.Context, req *mcp.CallToolRequest, in shellWaitIn) (string, shellStepOut, error) {
		return w.shellStep(ctx, req, in.ID, in.YieldMs, "shell_terminate", func(ctx context.Context, sess *shell.Session, y time.Duration) (shell.Step, error) {
			return sess.TerminateForeground(ctx, y)
		})
	})
	addTool(s, server, &mcp.Tool{Name: "shell_read", Title: "Read a shell session's transcript",
		Description: "Reads a session's transcript (everything its terminal showed) by offset: the middle a step left out " +
			"(its omitted_from), a whole step again (its from), or everything from the start. The newest MiB is in memory, " +
			"the first 64 MiB in the session's transcript file.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(w *mcpWorld, ctx context.Context, _ *mcp.CallToolRequest, in shellReadIn) (string, shellReadOut, error) {
		const maxRead = 1 << 20
		if in.Offset < 0 || in.MaxBytes < 0 || in.MaxBytes > maxRead {
			return "", shellReadOut{}, fmt.Errorf("[request refused: offset must be 0 or more and max_bytes between 0 and %d]", maxRead)
		}
		max := in.MaxBytes
		if max == 0 {
			max = shell.DefaultMaxOutputBytes
		}
		sess, err := w.shells.Get(in.ID)
		if err != nil {
			return "", shellReadOut{}, shellError(in.ID, err)
		}
		d, err := sess.ReadTranscript(in.Offset, max)
		if err != nil {
			return "", shellReadOut{}, shellError(in.ID, err)
		}
		out := shellReadOut{ID: in.ID, Text: shell.Render(d.Data), From: d.From, Next: d.Next, Total: d.Total, Dropped: d.Dropped}
		var b strings.Builder
		b.WriteString(out.Text)
		if out.Text != "" && !strings.HasSuffix(out.Text, "\n") {
			b.WriteString("\n")
		}
		if d.Dropped > 0 {
			fmt.Fprintf(&b, "[%d bytes from offset %d on are no longer held]\n", d.Dropped, in.Offset)
		}
		fmt.Fprintf(&b, "[transcript bytes %d to %d of %d", d.From, d.Next, d.Total)
		if d.Next < d.Total {
			fmt.Fprintf(&b, "; shell_read {\"id\":%q,\"offset\":%d} reads on", in.ID, d.Next)
		}
		b.WriteString("]\n")
		return b.String(), out, nil
	})
	addTool(s, server, &mcp.Tool{Name: "shell_close", Title: "Close a shell session",
		Description: "Closes a shell session: the shell and everything it started (jobs, nohup and setsid children) are ended.",
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true},
	}, func(w *mcpWorld, ctx context.Context, _ *mcp.CallToolRequest, in shellIDIn) (string, shellCloseOut, error) {
		if err := w.shells.CloseSession(in.ID); err != nil {
			return "", shellCloseOut{}, shellError(in.ID, err)
		}
		return fmt.Sprintf("[closed shell session %s and everything it started]\n", in.ID), shellCloseOut{ID: in.ID, Closed: true}, nil
	})
	addTool(s, server, &mcp.Tool{Name: "shell_list", Title: "List shell sessions",
		Description: "Lists the open shell sessions: id, state, last command, cwd, idle time.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, func(w *mcpWorld, ctx context.Context, _ *mcp.CallToolRequest, _ shellOpenIn) (string, shellListOut, error) {
		out := shellListOut{Sessions: []shellInfoOut{}}
		var b strings.Builder
		for _, in := range w.shells.List() {
			info := shellInfoOf(in.ID, in)
			out.Sessions = append(out.Sessions, info)
			fmt.Fprintf(&b, "session %s (pid %d): %s, cwd %s, last command %q\n", info.ID, info.Pid, info.State, info.Cwd, info.Command)
		}
		if len(out.Sessions) == 0 {
			b.WriteString("[no shell sessions are open; shell_open opens one]\n")
		}
		return b.String(), out, nil
	})
}

type shellReadIn struct {
	ID       string `json:"id" jsonschema:"the id shell_open returned"`
	Offset   int64  `json:"offset,omitempty" jsonschema:"the transcript offset to read from (a step's from or omitted_from); default 0, the start"`
	MaxBytes int    `json:"max_bytes,omitempty" jsonschema:"read at most this many bytes (default 64000, at most 1048576)"`
}

type shellReadOut struct {
	ID      string `json:"id"`
	Text    string `json:"text" jsonschema:"the transcript from from to next, as a terminal shows it"`
	From    int64  `json:"from" jsonschema:"the offset the text starts at (above the offset asked for when those bytes are no longer held)"`
	Next    int64  `json:"next" jsonschema:"the offset to read from next"`
	Total   int64  `json:"total" jsonschema:"the transcript's length so far"`
	Dropped int64  `json:"dropped" jsonschema:"bytes from the offset asked for on that are no longer held (beyond the transcript file's bound and before the memory's)"`
}

type shellCloseOut struct {
	ID     string `json:"id"`
	Closed bool   `json:"closed"`
}

type shellListOut struct {
	Sessions []shellInfoOut `json:"sessions"`
}

// shellStep runs one step of a session. When the client cancels the call while the step
// waits, the foreground program gets Ctrl-C and the step says cancelled.
func (w *mcpWorld) shellStep(ctx context.Context, req *mcp.CallToolRequest, id string, yieldMs int64, what string,
	step func(context.Context, *shell.Session, time.Duration) (shell.Step, error)) (string, shellStepOut, error) {
	yield, err := millis("yield_ms", yieldMs, shell.DefaultYield, shell.DefaultMaxYield)
	if err != nil {
		return "", shellStepOut{}, fmt.Errorf("[request refused: %v]", err)
	}
	sess, err := w.shells.Get(id)
	if err != nil {
		return "", shellStepOut{}, shellError(id, err)
	}
	stop := w.s.progress(ctx, req, what)
	st, err := step(ctx, sess, yield)
	stop()
	cancelled := false
	if err != nil && ctx.Err() != nil && !errors.Is(err, shell.ErrClosed) {
		// The command goes on: interrupt it, bounded, whatever the call's context says.
		ictx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err = sess.Interrupt(ictx, time.Second)
		cancel()
		cancelled = true
	}
	if err != nil {
		return "", shellStepOut{}, shellError(id, err)
	}
	out := shellStepOf(id, st)
	out.Cancelled = cancelled
	return renderStep(out), out, nil
}
