package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/subkit/subkit/internal/exitstatus"
	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/subprocess"
)

func TestMain(m *testing.M) {
	subprocess.HelperMain() // the test binary is the guard's helper
	if os.Getenv(asCLIVar) != "" {
		os.Exit(runMain(os.Args[1:])) // the test binary as the subkit command (black-box tests)
	}
	goleak.VerifyTestMain(m)
}

// asCLIVar makes the test binary run as the subkit command itself, with its arguments.
const asCLIVar = "SUBKIT_TEST_AS_CLI"

// cli runs the CLI in-process with a marked environment and a private temp dir.
func cli(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	leakChecked(t)
	var out, errb bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// needPOSIX skips a test on Windows, which lacks what it runs (bash, POSIX signals).
func needPOSIX(t *testing.T, what string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skipf("Windows lacks what this test needs: it %s", what)
	}
}

func decode[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	require.NoError(t, dec.Decode(&v), "output: %s", s)
	assert.False(t, dec.More(), "exactly one JSON object")
	return v
}

func TestExecJSON(t *testing.T) {
	needPOSIX(t, "runs bash")
	code, out, _ := cli(t, "", "exec", "--json", "--", "bash", "-c", "echo out; echo err >&2; exit 5")
	require.Equal(t, 0, code)
	o := decode[execResult](t, out)
	assert.Equal(t, []string{"bash", "-c", "echo out; echo err >&2; exit 5"}, o.Argv)
	require.NotNil(t, o.ExitCode)
	assert.Equal(t, 5, *o.ExitCode)
	assert.Equal(t, "", o.Signal)
	assert.Equal(t, "out\n", o.Stdout.Tail)
	assert.Equal(t, "err\n", o.Stderr.Tail)
	assert.EqualValues(t, 4, o.Stdout.TotalBytes)
	assert.NotZero(t, o.Pid)
	// The raw shape: exit_code is present, spill_path present and empty.
	assert.Contains(t, out, `"spill_path":""`)
}

func TestExecSignalledJSON(t *testing.T) {
	needPOSIX(t, "runs bash and ends it with SIGKILL")
	code, out, _ := cli(t, "", "exec", "--json", "--", "bash", "-c", "kill -KILL $$")
	require.Equal(t, 0, code)
	assert.Contains(t, out, `"exit_code":null`)
	o := decode[execResult](t, out)
	assert.Equal(t, "SIGKILL", o.Signal)
}

func TestExecTimeoutAndDaemon(t *testing.T) {
	needPOSIX(t, "runs bash and sleep, and ends them with SIGTERM and SIGKILL")
	code, out, _ := cli(t, "", "exec", "--json", "--timeout", "3s", "--grace", "200ms", "--",
		"bash", "-c", "trap '' TERM; sleep 1000 & echo up; wait")
	require.Equal(t, 0, code)
	o := decode[execResult](t, out)
	assert.True(t, o.TimedOut)
	assert.Equal(t, "SIGKILL", o.Signal)
	assert.Nil(t, o.ExitCode)
	assert.Equal(t, "up\n", o.Stdout.Tail)

	code, _, errOut := cli(t, "", "exec", "--timeout", "200ms", "--", "sleep", "10")
	assert.Equal(t, exitTimeout, code)
	assert.Contains(t, errOut, "timed out")
}

func TestExecPlainExitStatus(t *testing.T) {
	needPOSIX(t, "runs bash and ends it with SIGTERM")
	code, out, errOut := cli(t, "", "exec", "--", "bash", "-c", "echo hi; echo oops >&2; exit 7")
	assert.Equal(t, 7, code)
	assert.Equal(t, "hi\n", out)
	assert.Equal(t, "oops\n", errOut)
	code, _, _ = cli(t, "", "exec", "--", "bash", "-c", "kill -TERM $$")
	assert.Equal(t, 128+15, code)
}

func TestExecStdinAndEnv(t *testing.T) {
	needPOSIX(t, "runs bash and cat")
	code, out, _ := cli(t, "from stdin", "exec", "--json", "--stdin-file", "-", "--env", "A=1", "--", "bash", "-c", `cat; echo " $A"`)
	require.Equal(t, 0, code)
	assert.Equal(t, "from stdin 1\n", decode[execResult](t, out).Stdout.Tail)
	f := filepath.Join(t.TempDir(), "in")
	require.NoError(t, os.WriteFile(f, []byte("file"), 0o600))
	code, out, _ = cli(t, "", "exec", "--json", "--stdin-file", f, "--", "cat")
	require.Equal(t, 0, code)
	assert.Equal(t, "file", decode[execResult](t, out).Stdout.Tail)
}

func TestExecTruncationAndSpill(t *testing.T) {
	needPOSIX(t, "runs bash, seq and printf")
	code, out, _ := cli(t, "", "exec", "--json", "--tail-bytes", "10", "--", "bash", "-c", "seq 1 1000")
	require.Equal(t, 0, code)
	o := decode[execResult](t, out)
	assert.True(t, o.Stdout.Truncated)
	assert.Equal(t, "\n999\n1000\n", o.Stdout.Tail)
	require.NotEmpty(t, o.Stdout.SpillPath)
	data, err := os.ReadFile(o.Stdout.SpillPath)
	require.NoError(t, err)
	assert.EqualValues(t, o.Stdout.TotalBytes, len(data))
	assert.True(t, strings.HasPrefix(string(data), "1\n2\n3\n"))

	code, out, _ = cli(t, "", "exec", "--json", "--tail-bytes", "10", "--spill-bytes", "0", "--", "bash", "-c", "seq 1 1000")
	require.Equal(t, 0, code)
	assert.Empty(t, decode[execResult](t, out).Stdout.SpillPath)

	// A truncated tail never starts inside a UTF-8 character.
	code, out, _ = cli(t, "", "exec", "--json", "--tail-bytes", "5", "--", "printf", "ééé")
	require.Equal(t, 0, code)
	assert.Equal(t, "éé", decode[execResult](t, out).Stdout.Tail)
}

func TestExecStartErrors(t *testing.T) {
	dir := t.TempDir()
	noexec := filepath.Join(dir, "noexec")
	require.NoError(t, os.WriteFile(noexec, []byte("x"), 0o644))
	cases := []struct {
		args []string
		kind string
		code int
	}{
		{[]string{"--", "no-such-program-xyz"}, "not_found", exitNotFound},
		{[]string{"--", noexec}, "permission", exitNotExec},
		{[]string{"--bogus", "--", "true"}, "invalid", exitUsage},
		{[]string{}, "invalid", exitUsage},
		{[]string{"--tail-bytes", "-1", "--", "true"}, "invalid", exitUsage},
		{[]string{"--env", "NOEQUALS", "--", "true"}, "invalid", exitUsage},
		{[]string{"--dir", "/no/such/dir", "--", "true"}, "invalid", exitUsage}, // bad usage, not a program not found
		{[]string{"--dir", noexec, "--", "true"}, "invalid", exitUsage},
	}
	for _, c := range cases {
		if c.kind == "permission" && runtime.GOOS == "windows" {
			continue // Windows has no execute permission: a file that is not a program is another error there
		}
		code, out, _ := cli(t, "", append([]string{"exec", "--json"}, c.args...)...)
		assert.Equal(t, c.code, code, "%v", c.args)
		o := decode[errorOutput](t, out)
		assert.Equal(t, c.kind, o.Error.Kind, "%v", c.args)
		assert.NotEmpty(t, o.Error.Message)

		code, out, errOut := cli(t, "", append([]string{"exec"}, c.args...)...)
		assert.Equal(t, c.code, code, "%v", c.args)
		assert.Empty(t, out)
		assert.Contains(t, errOut, "subkit:")
	}
}

func TestUsage(t *testing.T) {
	code, _, errOut := cli(t, "")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "usage")
	code, _, _ = cli(t, "", "frobnicate")
	assert.Equal(t, exitUsage, code)
	code, out, _ := cli(t, "", "exec", "-h")
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "--timeout")
}

// leakChecked gives the test a mark for the processes it starts and checks at its end that
// none of them, nor a descriptor, is left; it points TMPDIR at a temp dir of the test's own,
// which it returns.
func leakChecked(t *testing.T) (mark, tmp string) {
	t.Helper()
	mark = testutil.Mark()
	testutil.NoLeaks(t, mark)
	t.Setenv(testutil.MarkVar, mark)
	tmp = t.TempDir()
	t.Setenv("TMPDIR", tmp)
	return mark, tmp
}

// Every command's -h ends with the one exit-status table, and the README holds the same rows
// (go generate writes them there).
func TestExitStatusTableEverywhere(t *testing.T) {
	for _, cmd := range []string{"exec", "tree", "term", "bash", "shell", "lsp", "code", "mcp", "version"} {
		var out, errb strings.Builder
		require.Equal(t, 0, run(context.Background(), []string{cmd, "-h"}, strings.NewReader(""), &out, &errb), cmd)
		assert.True(t, strings.HasSuffix(out.String(), "\n"+exitstatus.Text()), "%s -h:\n%s", cmd, out.String())
	}
	var out, errb strings.Builder
	require.Equal(t, 0, run(context.Background(), []string{"-h"}, strings.NewReader(""), &out, &errb))
	assert.True(t, strings.HasSuffix(out.String(), exitstatus.Text()))
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	assert.Contains(t, string(readme), exitstatus.Markdown(), "run go generate ./cmd/subkit")
}
