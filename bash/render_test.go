package bash_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/subkit/subkit/bash"
	"github.com/subkit/subkit/procinspect"
	"github.com/subkit/subkit/subprocess"
)

func stream(tail string, total int64) subprocess.StreamResult {
	return subprocess.StreamResult{Tail: []byte(tail), TotalBytes: total, Truncated: total > int64(len(tail))}
}

func TestRender(t *testing.T) {
	cases := []struct {
		name string
		res  bash.Result
		want string
	}{
		{"normal", bash.Result{Stdout: stream("hello\n", 6)},
			"hello\n[exit code 0]\n"},
		{"both streams, no final newline", bash.Result{Outcome: subprocess.Outcome{ExitCode: 2}, Stdout: stream("out", 3), Stderr: stream("err\n", 4)},
			"out\n[stderr]\nerr\n[exit code 2]\n"},
		{"stderr only", bash.Result{Outcome: subprocess.Outcome{ExitCode: 1}, Stderr: stream("boom\n", 5)},
			"[stderr]\nboom\n[exit code 1]\n"},
		{"nothing", bash.Result{}, "(no output)\n[exit code 0]\n"},
		{"invalid UTF-8", bash.Result{Stdout: stream("a\xffb\n", 4)}, "a\uFFFDb\n[exit code 0]\n"},
		{"truncated with spill", bash.Result{Stdout: func() subprocess.StreamResult {
			s := stream("\xa9end\n", 1000) // a cut "é" starts the tail
			s.SpillPath = "/tmp/x/stdout-1.log"
			return s
		}()},
			"[stdout truncated: only its last 4 bytes of 1000 bytes are shown below; the whole stdout is in the file /tmp/x/stdout-1.log. " +
				"Read parts of it with a command such as `sed -n '1,200p' FILE`, `grep -n PATTERN FILE` or `tail -c 20000 FILE`]\nend\n[exit code 0]\n"},
		{"truncated past the spill cap", bash.Result{Outcome: subprocess.Outcome{ExitCode: 1}, Stderr: stream("tail\n", 99999)},
			"[stderr]\n[stderr truncated: only its last 5 bytes of 99999 bytes are shown below; the earlier output was too large to keep (over maxSpillBytes)]\ntail\n[exit code 1]\n"},
		{"spill lost", bash.Result{Stdout: func() subprocess.StreamResult {
			s := stream("t\n", 50)
			s.SpillErr = errors.New("write spill file: no space left on device")
			return s
		}()},
			"[stdout truncated: only its last 2 bytes of 50 bytes are shown below; the file meant to keep the whole stdout was lost (tool failure: write spill file: no space left on device)]\nt\n[exit code 0]\n"},
		{"timeout", bash.Result{Outcome: subprocess.Outcome{ExitCode: -1, Signal: "SIGKILL", TimedOut: true}, Timeout: 2 * time.Minute, Stdout: stream("partial\n", 8)},
			"partial\n[timed out after 2m0s: the command and every process it started were terminated (the shell ended by SIGKILL)]\n"},
		{"signal", bash.Result{Outcome: subprocess.Outcome{ExitCode: -1, Signal: "SIGSEGV"}}, "(no output)\n[killed by signal SIGSEGV]\n"},
		{"cancelled", bash.Result{Outcome: subprocess.Outcome{ExitCode: -1, Signal: "SIGTERM", Cancelled: true}},
			"(no output)\n[cancelled: the command and every process it started were terminated (the shell ended by SIGTERM)]\n"},
		{"survivors", bash.Result{Outcome: subprocess.Outcome{PipesHeld: true}, Lingering: true, Stdout: stream("done\n", 5), Survivors: []procinspect.Proc{
			{Identity: procinspect.Identity{Pid: 41, Start: 1}, Comm: "sleep"},
			{Identity: procinspect.Identity{Pid: 42, Start: 1}, Comm: "python3"},
		}}, "done\n[exit code 0]\n" +
			"[a process the command started kept the output open after the shell exited; output it wrote later is not shown]\n" +
			"[2 processes the command started are still running in the background: pid 41 (sleep), pid 42 (python3). " +
			"They run until they exit or the executor shuts down; stop them with `kill 41 42`]\n"},
		{"survivors not listable", bash.Result{Lingering: true, SurvivorsErr: bash.ErrUnsupported},
			"(no output)\n[exit code 0]\n[processes the command started are still running in the background (they could not be listed: not supported on this platform); they run until they exit or the executor shuts down]\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, bash.Render(c.res, nil))
		})
	}
}

// Failures of the tool read differently from failures of the command.
func TestRenderErrors(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{&bash.RequestError{Field: "Env", Key: "DSH_X", Err: errors.New("names with the managed prefix DSH_ belong in ManagedEnv")},
			"[request refused, the command did not run: bash: request Env[\"DSH_X\"]: names with the managed prefix DSH_ belong in ManagedEnv]\n"},
		{&bash.Error{Op: "start", Kind: bash.ErrTooMany, Err: errors.New("64 background processes are running, the maxBackground limit")},
			"[request refused, the command did not run: bash: start: too many background processes: 64 background processes are running, the maxBackground limit]\n"},
		{&bash.Error{Op: "exec", Kind: bash.ErrClosed},
			"[tool failure, not a failure of the command: the bash executor has been shut down; the command did not run]\n"},
		{&bash.Error{Op: "exec", Err: fmt.Errorf("spawn bash: %w", bash.ErrNotFound)},
			"[tool failure, not a failure of the command: the command could not be run: bash: exec: spawn bash: not found]\n"},
		{&bash.Error{Op: "exec", Err: context.Canceled},
			"[cancelled before it started, the command did not run: bash: exec: context canceled]\n"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, bash.Render(bash.Result{Outcome: subprocess.Outcome{ExitCode: 3}}, c.err))
	}
}

func TestRenderDelta(t *testing.T) {
	running := bash.Delta{
		Pid:    7,
		Stdout: subprocess.Delta{From: 10, Data: []byte("more\n"), Next: 15, Total: 15},
		Next:   bash.Offsets{Stdout: 15},
	}
	assert.Equal(t, "more\n[background process 7 is still running; read new output from stdout offset 15, stderr offset 0]\n", bash.RenderDelta(running))

	quiet := bash.Delta{Pid: 7, Next: bash.Offsets{Stdout: 15, Stderr: 2}}
	assert.Equal(t, "[no new output; background process 7 is still running]\n", bash.RenderDelta(quiet))
	quiet.Result = &bash.Result{Outcome: subprocess.Outcome{ExitCode: 0}}
	quiet.Stdout = subprocess.Delta{From: 15, Next: 15, Total: 15, Done: true}
	quiet.Stderr = subprocess.Delta{From: 2, Next: 2, Total: 2, Done: true}
	assert.Equal(t, "[background process 7 has ended; all output has been read]\n[exit code 0]\n", bash.RenderDelta(quiet),
		"nothing new from a process that ended: only the end")

	res := &bash.Result{Outcome: subprocess.Outcome{ExitCode: 1}}
	ended := bash.Delta{
		Pid:    7,
		Stdout: subprocess.Delta{From: 900, Dropped: 900, Data: []byte("\x80\x80tail\n"), Next: 906, Total: 906, Done: true},
		Stderr: subprocess.Delta{Data: []byte("err\n"), Next: 4, Total: 4, Done: true},
		Next:   bash.Offsets{Stdout: 906, Stderr: 4},
		Result: res,
	}
	assert.Equal(t, "[900 bytes of stdout before offset 900 are no longer available]\ntail\n[stderr]\nerr\n"+
		"[background process 7 has ended; all output has been read]\n[exit code 1]\n", bash.RenderDelta(ended))

	ended.Stderr.Done, ended.Stderr.Total = false, 10
	assert.Contains(t, bash.RenderDelta(ended), "[background process 7 has ended; more output remains from stdout offset 906, stderr offset 4]\n[exit code 1]\n")
}
