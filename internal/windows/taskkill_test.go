package windows

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Outputs as taskkill (English Windows) prints them, CRLF included.
const (
	outSuccess = "SUCCESS: The process with PID 4243 (child process of PID 4242) has been terminated.\r\n" +
		"SUCCESS: The process with PID 4242 (child process of PID 100) has been terminated.\r\n"
	outNotFound = "ERROR: The process \"4242\" not found.\r\n"
	outDenied   = "ERROR: The process with PID 4242 (child process of PID 100) could not be terminated.\r\n" +
		"Reason: Access is denied.\r\n"
	outNoInstance = "SUCCESS: The process with PID 4243 (child process of PID 4242) has been terminated.\r\n" +
		"ERROR: The process with PID 4242 (child process of PID 100) could not be terminated.\r\n" +
		"Reason: There is no running instance of the task.\r\n"
	outPartialDenied = "SUCCESS: The process with PID 4243 (child process of PID 4242) has been terminated.\r\n" +
		"ERROR: The process with PID 4244 (child process of PID 4242) could not be terminated.\r\n" +
		"Reason: Access is denied.\r\n"
	outCritical = "ERROR: The process with PID 4242 (child process of PID 100) could not be terminated.\r\n" +
		"Reason: This is critical system process. Taskkill cannot end this process.\r\n"
	outGerman = "FEHLER: Der Prozess \"4242\" wurde nicht gefunden.\r\n"
)

func TestClassifyTaskkill(t *testing.T) {
	for _, tc := range []struct {
		name   string
		out    string
		code   int
		runErr error
		want   error // nil: the tree counts as gone
	}{
		{"success", outSuccess, 0, nil, nil},
		{"not found, exit 128, is gone", outNotFound, 128, nil, nil},
		{"no running instance (race), exit 128, is gone", outNoInstance, 128, nil, nil},
		{"access denied, exit 128, is not success", outDenied, 128, nil, ErrAccessDenied},
		{"access denied, exit 1", outDenied, 1, nil, ErrAccessDenied},
		{"access denied with exit 0 still reported", outPartialDenied, 0, nil, ErrAccessDenied},
		{"partial kill with one denied", outPartialDenied, 128, nil, ErrAccessDenied},
		{"other reason", outCritical, 1, nil, ErrTaskkillFailed},
		{"not found text with another exit code", outNotFound, 1, nil, ErrTaskkillFailed},
		{"exit 128 without text", "", 128, nil, ErrTaskkillFailed},
		{"localized output, exit 128: not confirmed", outGerman, 128, nil, ErrTaskkillFailed},
		{"unknown exit code", "", 255, nil, ErrTaskkillFailed},
		{"missing binary (fs)", "", -1, &fs.PathError{Op: "fork/exec", Path: `C:\Windows\System32\taskkill.exe`, Err: fs.ErrNotExist}, ErrTaskkillMissing},
		{"missing binary (lookup)", "", -1, exec.ErrNotFound, ErrTaskkillMissing},
		{"no path configured", "", -1, ErrTaskkillMissing, ErrTaskkillMissing},
		{"timeout", "", -1, context.DeadlineExceeded, ErrTaskkillFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := classifyTaskkill([]byte(tc.out), tc.code, tc.runErr)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
			if tc.runErr != nil {
				require.ErrorIs(t, err, tc.runErr, "the cause stays visible")
			}
		})
	}
}

func TestTaskkillErrorsJoinsReasonLines(t *testing.T) {
	got := taskkillErrors([]byte(outPartialDenied + outNotFound))
	assert.Equal(t, []string{
		"error: the process with pid 4244 (child process of pid 4242) could not be terminated. reason: access is denied.",
		`error: the process "4242" not found.`,
	}, got)
}

func TestOneLineBoundsOutput(t *testing.T) {
	assert.Equal(t, `ERROR: The process "4242" not found.`, oneLine([]byte(outNotFound)))
	long := oneLine([]byte(strings.Repeat("é", 1000)))
	assert.LessOrEqual(t, len(long), maxOutput+3)
	assert.True(t, strings.HasSuffix(long, "..."))
	assert.Equal(t, "a\uFFFDb", oneLine([]byte("a\xffb")))
}

func TestTaskkillArgs(t *testing.T) {
	assert.Equal(t, []string{"/PID", "4242", "/T", "/F"}, TaskkillArgs(4242))
}

// ExecRunner against the test binary standing in for taskkill.exe.
func TestExecRunner(t *testing.T) {
	self, err := os.Executable()
	require.NoError(t, err)
	ctx := context.Background()
	t.Setenv("GORACE", "atexit_sleep_ms=0") // a -race helper otherwise lingers 1s at exit

	t.Run("exit code and output, not an error", func(t *testing.T) {
		t.Setenv(helperEnv, `128:ERROR: The process "4242" not found.\n`)
		out, code, err := ExecRunner{Path: self}.Run(ctx, TaskkillArgs(4242))
		require.NoError(t, err)
		assert.Equal(t, 128, code)
		assert.Contains(t, string(out), `ERROR: The process "4242" not found.`)
		assert.Contains(t, string(out), "args=/PID 4242 /T /F")
		assert.NoError(t, classifyTaskkill(out, code, err))
	})
	t.Run("success", func(t *testing.T) {
		t.Setenv(helperEnv, "0:"+strings.ReplaceAll(outSuccess, "\r\n", `\n`))
		out, code, err := ExecRunner{Path: self}.Run(ctx, TaskkillArgs(1))
		require.NoError(t, err)
		assert.Equal(t, 0, code)
		assert.NoError(t, classifyTaskkill(out, code, err))
	})
	t.Run("access denied with exit 128", func(t *testing.T) {
		t.Setenv(helperEnv, "128:"+strings.ReplaceAll(outDenied, "\r\n", `\n`))
		out, code, err := ExecRunner{Path: self}.Run(ctx, TaskkillArgs(1))
		require.NoError(t, err)
		assert.ErrorIs(t, classifyTaskkill(out, code, err), ErrAccessDenied)
	})
	t.Run("missing binary", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "taskkill.exe")
		out, code, err := ExecRunner{Path: missing}.Run(ctx, TaskkillArgs(1))
		require.Error(t, err)
		assert.Equal(t, -1, code)
		assert.ErrorIs(t, classifyTaskkill(out, code, err), ErrTaskkillMissing)
	})
	t.Run("no path", func(t *testing.T) {
		_, _, err := ExecRunner{}.Run(ctx, TaskkillArgs(1))
		assert.ErrorIs(t, err, ErrTaskkillMissing)
	})
	t.Run("timeout ends the run", func(t *testing.T) {
		t.Setenv(helperEnv, "sleep")
		ctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		start := time.Now()
		out, code, err := ExecRunner{Path: self}.Run(ctx, TaskkillArgs(1))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Less(t, time.Since(start), 10*time.Second)
		cerr := classifyTaskkill(out, code, err)
		assert.ErrorIs(t, cerr, ErrTaskkillFailed)
		assert.False(t, errors.Is(cerr, ErrTaskkillMissing))
	})
}
