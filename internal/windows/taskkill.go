package windows

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// taskkill runs the taskkill route: fence the leader's pid by its creation time, hold it open,
// and run `taskkill /PID <pid> /T /F`. nil means the tree is gone (killed, or already gone).
func (t *Tree) taskkill() error {
	e := &Error{Op: "kill", Route: RouteTaskkill, Pid: t.id.Pid}
	if t.idErr != nil {
		e.Err = fmt.Errorf("%w: its creation time could not be read at spawn (%w); not killing by pid", ErrIdentityUnknown, t.idErr)
		return e
	}
	p, err := t.sys.OpenProcess(t.id.Pid)
	if errors.Is(err, ErrNoProcess) {
		return nil // the leader is gone, and with it what taskkill /T could reach
	}
	if err != nil {
		e.Err = fmt.Errorf("%w: open the pid to check its creation time: %w; not killing by pid", ErrIdentityUnknown, err)
		return e
	}
	// While p is open the pid cannot be given to another process, so the check below holds
	// until taskkill has finished.
	defer p.Close()
	start, err := p.Start()
	if err != nil {
		e.Err = fmt.Errorf("%w: read the creation time: %w; not killing by pid", ErrIdentityUnknown, err)
		return e
	}
	if start != t.id.Start {
		e.Err = fmt.Errorf("%w: pid %d was created at %d, the leader at %d; not killed (the leader is gone)",
			ErrIdentityChanged, t.id.Pid, start, t.id.Start)
		return e
	}
	ctx, cancel := context.WithTimeout(context.Background(), t.timeout)
	defer cancel()
	out, code, err := t.runner.Run(ctx, TaskkillArgs(t.id.Pid))
	if err := classifyTaskkill(out, code, err); err != nil {
		e.Err = err
		e.Output = oneLine(out)
		return e
	}
	return nil
}

// TaskkillArgs are the arguments of the taskkill route for a leader pid: the tree (/T),
// forcibly (/F).
func TaskkillArgs(pid int) []string {
	return []string{"/PID", strconv.Itoa(pid), "/T", "/F"}
}

// classifyTaskkill turns one taskkill run into nil (the tree is killed, or was already gone)
// or an error wrapping ErrTaskkillMissing, ErrAccessDenied or ErrTaskkillFailed.
//
// taskkill prints one SUCCESS: or ERROR: message per process (an ERROR's reason may follow on
// its own line). Its exit code is 0 when all went
// well and 128 when a process was not found, but 128 (or 1) also comes with "Access is denied",
// so the code alone never means gone. The rules, strictest first:
//   - any ERROR message saying access is denied: ErrAccessDenied, whatever the exit code;
//   - any other ERROR message that is not a not-found one: ErrTaskkillFailed;
//   - exit 0: killed;
//   - exit 128 with only not-found ERROR messages ("not found", "There is no running instance of
//     the task"): gone;
//   - anything else (another code, or text in another language): ErrTaskkillFailed, with the
//     output, since nothing confirms the tree is gone.
func classifyTaskkill(out []byte, code int, runErr error) error {
	if runErr != nil {
		if errors.Is(runErr, ErrTaskkillMissing) || errors.Is(runErr, fs.ErrNotExist) || errors.Is(runErr, exec.ErrNotFound) {
			return fmt.Errorf("%w: %w", ErrTaskkillMissing, runErr)
		}
		return fmt.Errorf("%w: %w", ErrTaskkillFailed, runErr)
	}
	var denied, notFound, other int
	for _, msg := range taskkillErrors(out) {
		switch {
		case strings.Contains(msg, "access is denied"):
			denied++
		case strings.Contains(msg, "not found"), strings.Contains(msg, "no running instance"):
			notFound++
		default:
			other++
		}
	}
	switch {
	case denied > 0:
		return fmt.Errorf("%w: taskkill exit %d, %d process(es) refused", ErrAccessDenied, code, denied)
	case other > 0:
		return fmt.Errorf("%w: taskkill exit %d, %d process(es) not terminated", ErrTaskkillFailed, code, other)
	case code == 0:
		return nil
	case code == 128 && notFound > 0:
		return nil
	}
	return fmt.Errorf("%w: taskkill exit %d with output it does not recognise", ErrTaskkillFailed, code)
}

// taskkillErrors returns taskkill's ERROR: messages, lower-cased, each with the lines that
// continue it ("Reason: Access is denied." comes on a line of its own).
func taskkillErrors(out []byte) []string {
	var msgs []string
	in := false
	for _, line := range strings.Split(string(out), "\n") {
		l := strings.ToLower(strings.TrimSpace(line))
		switch {
		case strings.HasPrefix(l, "error:"):
			msgs = append(msgs, l)
			in = true
		case strings.HasPrefix(l, "success:"), strings.HasPrefix(l, "info:"), l == "":
			in = false
		case in:
			msgs[len(msgs)-1] += " " + l
		}
	}
	return msgs
}

// maxOutput bounds the taskkill output kept in an error.
const maxOutput = 512

// oneLine makes taskkill's output (OEM code page, CRLF lines) fit in an error message.
func oneLine(out []byte) string {
	s := strings.ToValidUTF8(string(bytes.TrimSpace(out)), "\uFFFD")
	s = strings.Join(strings.Fields(strings.ReplaceAll(s, "\r", "")), " ")
	if len(s) > maxOutput {
		s = strings.ToValidUTF8(s[:maxOutput], "") + "..."
	}
	return s
}

// ExecRunner runs taskkill.exe with os/exec.
type ExecRunner struct {
	// Path is taskkill.exe's absolute path; empty means none is known, and Run fails with
	// ErrTaskkillMissing. It is never searched in PATH, which the child's environment controls.
	Path string
	// SysProcAttr, when set, is given to the taskkill process (DefaultRunner hides its window).
	SysProcAttr *syscall.SysProcAttr
}

// waitDelay bounds the wait for taskkill's output pipe after ctx ends.
const waitDelay = time.Second

// Run implements Runner.
func (r ExecRunner) Run(ctx context.Context, args []string) ([]byte, int, error) {
	if r.Path == "" {
		return nil, -1, fmt.Errorf("%w: no path configured", ErrTaskkillMissing)
	}
	cmd := exec.CommandContext(ctx, r.Path, args...)
	cmd.SysProcAttr = r.SysProcAttr
	cmd.WaitDelay = waitDelay
	out, err := cmd.CombinedOutput()
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return out, -1, fmt.Errorf("run %s: %w", r.Path, cerr)
		}
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out, ee.ExitCode(), nil
		}
		return out, -1, fmt.Errorf("run %s: %w", r.Path, err)
	}
	return out, 0, nil
}
