package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/subkit/subkit/internal/testutil"
	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// modeVar makes the test binary, started as a confined program, do one thing (testMode).
const modeVar = "SUBKIT_SANDBOX_TEST_MODE"

func TestMain(m *testing.M) {
	if os.Getenv(RoleVar) == RoleSandbox {
		os.Exit(Main()) // the test binary is its own helper
	}
	if mode := os.Getenv(modeVar); mode != "" {
		os.Exit(testMode(mode, os.Args[1:]))
	}
	goleak.VerifyTestMain(m)
}

// testMode is what the test binary does as a confined program: it exits 0 when the operation
// worked, 1 (with the error on stderr) when it failed.
func testMode(mode string, args []string) int {
	err := func() error {
		switch mode {
		case "caller":
			return callerMode()
		case "connect":
			return connectMode(args)
		case "connect-edges":
			return connectEdgesMode(args[0])
		case "dial":
			c, err := net.Dial("tcp", args[0])
			if err != nil {
				return err
			}
			return c.Close()
		case "listen", "listen-mptcp":
			// Plain TCP, as most programs bind, unless asked for Go's default of MPTCP.
			var lc net.ListenConfig
			lc.SetMultipathTCP(mode == "listen-mptcp")
			l, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
			if err != nil {
				return err
			}
			return l.Close()
		case "ptrace":
			pid, err := strconv.Atoi(args[0])
			if err != nil {
				return err
			}
			// PTRACE_SEIZE does not stop the tracee; the tracer's exit detaches.
			if err := unix.PtraceSeize(pid); err != nil {
				return fmt.Errorf("ptrace(PTRACE_SEIZE, %d): %w", pid, err)
			}
			return nil
		case "mount":
			if err := unix.Mount("none", args[0], "tmpfs", 0, ""); err != nil {
				return fmt.Errorf("mount: %w", err)
			}
			return unix.Unmount(args[0], 0)
		case "socket":
			fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
			if err != nil {
				return fmt.Errorf("socket(AF_INET): %w", err)
			}
			return unix.Close(fd)
		case "child-socket":
			// A child started afresh, with an environment of its own, tries again.
			self, err := os.Executable()
			if err != nil {
				return err
			}
			cmd := exec.Command(self)
			cmd.Env = []string{modeVar + "=socket"}
			cmd.Stderr = os.Stderr
			return cmd.Run()
		}
		return fmt.Errorf("unknown test mode %q", mode)
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "test mode:", err)
		return 1
	}
	return 0
}

// result is how one confined run ended.
type result struct {
	stdout, stderr string
	code           int            // exit status; -1 when signalled
	signal         syscall.Signal // the signal that ended it, or 0
}

// status is the exit status as a shell reports it: 128+N when signal N ended the program.
func (r result) status() int {
	if r.signal != 0 {
		return 128 + int(r.signal)
	}
	return r.code
}

// start runs l to its end, in a process group of its own that is killed afterwards (so that
// nothing it left behind survives the test); cred, when set, runs it as another user.
func start(t *testing.T, l *Launch, dir string, cred *syscall.Credential) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), l.Path)
	cmd.Args, cmd.Env, cmd.Dir = l.Args, l.Env, dir
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.SysProcAttr = l.SysProcAttr()
	cmd.SysProcAttr.Credential = cred
	// A process the program left holding its output must not hold the test: the group is
	// killed below, once Wait returns.
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Start()
	require.NoError(t, err)
	pgid := cmd.Process.Pid
	err = cmd.Wait()
	_ = syscall.Kill(-pgid, syscall.SIGKILL) // ESRCH when nothing is left: fine
	r := result{stdout: stdout.String(), stderr: stderr.String(), code: cmd.ProcessState.ExitCode()}
	var exitErr *exec.ExitError
	if err != nil && !errors.As(err, &exitErr) {
		require.NoError(t, err)
	}
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		r.signal = ws.Signal()
	}
	return r
}

// world is a test's directories: work (the working directory, writable), tmp (the private temp
// dir), home (with secrets in .ssh and .netrc, and a visible file), outside (not writable).
type world struct {
	root, work, tmp, home, outside string
}

const (
	secretMark  = "secret-mark-7d1f"
	visibleMark = "visible-mark-39ac"
)

func newWorld(t *testing.T) world {
	t.Helper()
	root := testutil.DirOutsideTmp(t, "sandbox-")
	w := world{root: root, work: filepath.Join(root, "work"), tmp: filepath.Join(root, "tmp"),
		home: filepath.Join(root, "home"), outside: filepath.Join(root, "outside")}
	for _, d := range []string{w.work, w.tmp, w.home, w.outside, filepath.Join(w.home, ".ssh"), filepath.Join(w.home, ".config", "gcloud")} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	for name, content := range map[string]string{
		".ssh/id_ed25519":            secretMark,
		".netrc":                     secretMark,
		".config/gcloud/credentials": secretMark,
		".config/visible.conf":       visibleMark,
		"visible.txt":                visibleMark,
	} {
		require.NoError(t, os.WriteFile(filepath.Join(w.home, name), []byte(content), 0o644))
	}
	require.NoError(t, os.WriteFile(filepath.Join(w.outside, "file"), []byte("outside\n"), 0o644))
	return w
}

// program is prog run in w.
func (w world) program(path string, args ...string) Program {
	return Program{Path: path, Args: append([]string{path}, args...), Env: []string{"PATH=/usr/bin:/bin", "HOME=" + w.home},
		Dir: w.work, TempDir: w.tmp, Home: w.home}
}

func (w world) sh(script string) Program {
	return w.program("/bin/sh", "-c", script)
}

// self is the test binary run in mode.
func (w world) self(t *testing.T, mode string, args ...string) Program {
	exe, err := os.Executable()
	require.NoError(t, err)
	p := w.program(exe, args...)
	p.Env = append(p.Env, modeVar+"="+mode)
	return p
}
