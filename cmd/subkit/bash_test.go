//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
)

// bashCLI runs `subkit bash ARGS` in-process with a marked environment and a private temp dir.
// At the end nothing may be left in that dir but the executor's spill directories, which keep
// published spill files by design (the retention sweep removes them later).
func bashCLI(t *testing.T, ctx context.Context, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	_, tmp := leakChecked(t)
	t.Cleanup(func() {
		ents, _ := os.ReadDir(tmp)
		for _, e := range ents {
			if !strings.HasPrefix(e.Name(), "subkit-bash-") {
				t.Errorf("leak: %s left in the temp dir", e.Name())
			}
		}
	})
	var out, errb bytes.Buffer
	code = cmdBash(ctx, args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
	return p
}

func TestBashJSON(t *testing.T) {
	cmd := "echo out; echo err >&2; exit 5"
	code, out, _ := bashCLI(t, context.Background(), "", "--json", cmd)
	require.Equal(t, 0, code)
	o := decode[bashResult](t, out)
	assert.Equal(t, cmd, o.Command)
	assert.Equal(t, []string{"bash", "-c", cmd}, o.Argv)
	require.NotNil(t, o.ExitCode)
	assert.Equal(t, 5, *o.ExitCode)
	assert.False(t, o.Cancelled)
	assert.False(t, o.TimedOut)
	assert.Equal(t, "out\n", o.Stdout.Tail)
	assert.Equal(t, "err\n", o.Stderr.Tail)
	assert.NotZero(t, o.Pid)
	// The raw shape: exec's keys plus command and cancelled.
	for _, key := range []string{`"argv":`, `"pid":`, `"exit_code":5`, `"signal":""`, `"timed_out":false`, `"duration_ms":`,
		`"stdout":{"tail":"out\n","total_bytes":4,"truncated":false,"spill_path":""}`, `"command":`, `"cancelled":false`} {
		assert.Contains(t, out, key)
	}
}

func TestBashText(t *testing.T) {
	code, out, errOut := bashCLI(t, context.Background(), "", "echo hi; echo oops >&2; exit 7")
	assert.Equal(t, 7, code)
	assert.Equal(t, "hi\n[stderr]\noops\n[exit code 7]\n", out)
	assert.Empty(t, errOut)
	code, out, _ = bashCLI(t, context.Background(), "", "kill -TERM $$")
	assert.Equal(t, 128+15, code)
	assert.Equal(t, "(no output)\n[killed by signal SIGTERM]\n", out)
}

func TestBashTimeout(t *testing.T) {
	cfg := writeFile(t, "bash.yaml", "graceMs: 200\n")
	code, out, _ := bashCLI(t, context.Background(), "", "--json", "--config", cfg, "--timeout", "3s",
		"trap '' TERM; sleep 1000 & echo up; sleep 1000")
	require.Equal(t, 0, code)
	o := decode[bashResult](t, out)
	assert.True(t, o.TimedOut)
	assert.Equal(t, "SIGKILL", o.Signal)
	assert.Nil(t, o.ExitCode)
	assert.Contains(t, out, `"exit_code":null`)
	assert.Equal(t, "up\n", o.Stdout.Tail)

	code, out, _ = bashCLI(t, context.Background(), "", "--config", cfg, "--timeout", "200ms", "sleep 10")
	assert.Equal(t, exitTimeout, code)
	assert.Contains(t, out, "[timed out after 200ms")
}

func TestBashCancelled(t *testing.T) {
	ctx, ready := testutil.CancelOnSignal(t)
	code, out, _ := bashCLI(t, ctx, "", "--json", "--env", "READY="+ready, `echo started; echo > "$READY"; sleep 1000`)
	require.Equal(t, exitCancelled, code, "interrupted, under --json too")
	o := decode[bashResult](t, out)
	assert.True(t, o.Cancelled)
	assert.Equal(t, "started\n", o.Stdout.Tail)

	ctx, ready = testutil.CancelOnSignal(t)
	code, out, _ = bashCLI(t, ctx, "", "--env", "READY="+ready, `echo > "$READY"; sleep 1000`)
	assert.Equal(t, exitCancelled, code)
	assert.Contains(t, out, "[cancelled:")
}

func TestBashStdoutMaxAndSpill(t *testing.T) {
	cfg := writeFile(t, "bash.json", `{"maxOutputBytes": 100}`)
	cmd := "seq 1 300; seq 1 300 >&2"
	code, out, _ := bashCLI(t, context.Background(), "", "--json", "--config", cfg, "--stdout-max", "5000", cmd)
	require.Equal(t, 0, code)
	o := decode[bashResult](t, out)
	assert.False(t, o.Stdout.Truncated)
	assert.EqualValues(t, 1092, o.Stdout.TotalBytes)
	assert.True(t, o.Stderr.Truncated)
	assert.Len(t, o.Stderr.Tail, 100)
	require.NotEmpty(t, o.Stderr.SpillPath)
	data, err := os.ReadFile(o.Stderr.SpillPath)
	require.NoError(t, err)
	assert.Len(t, data, 1092)

	code, out, _ = bashCLI(t, context.Background(), "", "--config", cfg, "seq 1 300")
	assert.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(out, "[stdout truncated: only its last 100 bytes of 1092 bytes are shown below; the whole stdout is in the file "), out)
}

func TestBashStdinAndEnv(t *testing.T) {
	code, out, _ := bashCLI(t, context.Background(), "from stdin", "--json", "--stdin-file", "-", "--env", "A=1", "--env", "B=x=y",
		`cat; echo " $A $B $PAGER"`)
	require.Equal(t, 0, code)
	assert.Equal(t, "from stdin 1 x=y cat\n", decode[bashResult](t, out).Stdout.Tail)
	f := writeFile(t, "in", "file")
	code, out, _ = bashCLI(t, context.Background(), "", "--json", "--stdin-file", f, "cat")
	require.Equal(t, 0, code)
	assert.Equal(t, "file", decode[bashResult](t, out).Stdout.Tail)
	code, out, _ = bashCLI(t, context.Background(), "ignored", "--json", "cat")
	require.Equal(t, 0, code)
	assert.Equal(t, "", decode[bashResult](t, out).Stdout.Tail, "no --stdin-file: the null device")
}

func TestBashErrors(t *testing.T) {
	badCfg := writeFile(t, "bad.yaml", "timeoutMs: 5\nbogus: 1\n")
	aboveMax := writeFile(t, "max.json", `{"timeoutMs": 700000}`)
	cases := []struct {
		args []string
		kind string
		code int
		says string
	}{
		{[]string{}, "invalid", exitUsage, "no command"},
		{[]string{"echo", "hi"}, "invalid", exitUsage, "quote the command"},
		{[]string{"--bogus", "true"}, "invalid", exitUsage, "bogus"},
		{[]string{"--env", "NOEQUALS", "true"}, "invalid", exitUsage, "NOEQUALS"},
		{[]string{"--env", "DSH_SESSION=x", "true"}, "invalid", exitUsage, "DSH_SESSION"},
		{[]string{"--timeout", "-1s", "true"}, "invalid", exitUsage, "--timeout"},
		{[]string{"--managed-env", "NOEQUALS", "true"}, "invalid", exitUsage, "--managed-env"},
		{[]string{"--managed-env", "HOME=/x", "true"}, "invalid", exitUsage, "HOME"},
		{[]string{"--stdout-max", "-5", "true"}, "invalid", exitUsage, "StdoutMaxBytes"},
		{[]string{"--config", badCfg, "true"}, "invalid", exitUsage, "bogus"},
		{[]string{"--config", aboveMax, "true"}, "invalid", exitUsage, "timeoutMs"},
		{[]string{"--config", "/no/such/file.yaml", "true"}, "invalid", exitUsage, "no such file"},
		{[]string{"--stdin-file", "/no/such/file", "true"}, "invalid", exitUsage, "--stdin-file"},
	}
	for _, c := range cases {
		code, out, _ := bashCLI(t, context.Background(), "", append([]string{"--json"}, c.args...)...)
		assert.Equal(t, c.code, code, "%v", c.args)
		o := decode[errorOutput](t, out)
		assert.Equal(t, c.kind, o.Error.Kind, "%v", c.args)
		assert.Contains(t, o.Error.Message, c.says, "%v", c.args)

		code, out, errOut := bashCLI(t, context.Background(), "", c.args...)
		assert.Equal(t, c.code, code, "%v", c.args)
		assert.Empty(t, out)
		assert.Contains(t, errOut, "subkit:")
		assert.Contains(t, errOut, `run "subkit bash -h" for usage`)
	}

	// bash not on PATH.
	t.Setenv("PATH", "/nonexistent")
	code, out, _ := bashCLI(t, context.Background(), "", "--json", "true")
	assert.Equal(t, exitNotFound, code)
	assert.Equal(t, "not_found", decode[errorOutput](t, out).Error.Kind)
}

func TestBashUsage(t *testing.T) {
	code, out, _ := bashCLI(t, context.Background(), "", "-h")
	assert.Equal(t, 0, code)
	for _, s := range []string{"--stdout-max", "--config", "Exit status", "124", "130", "127", "126", `"cancelled"`} {
		assert.Contains(t, out, s)
	}
}

// The JSON says which timeout applied, what was left running and whether pipes were held; text
// mode says a timeout was lowered and that what was left running was ended.
func TestBashJSONReportsAll(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "c.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("maxTimeoutMs: 3000\ntimeoutMs: 2000\ndrainMs: 50\n"), 0o644))
	code, out, _ := bashCLI(t, context.Background(), "", "--config", cfg, "--json", "--timeout", "20s", "sleep 1000 & echo up")
	require.Equal(t, 0, code, out)
	o := decode[bashResult](t, out)
	assert.Equal(t, int64(3000), o.TimeoutMs, "the applied timeout: the cap")
	assert.True(t, o.PipesHeld)
	require.Len(t, o.Survivors, 1)
	assert.Equal(t, "sleep", o.Survivors[0].Comm)
	assert.False(t, o.Cancelled)

	code, out, _ = bashCLI(t, context.Background(), "", "--config", cfg, "--json", "true")
	require.Equal(t, 0, code)
	o = decode[bashResult](t, out)
	assert.Equal(t, int64(2000), o.TimeoutMs, "the configuration's timeout")
	assert.NotNil(t, o.Survivors, "a list, never null")
	code, out, _ = bashCLI(t, context.Background(), "", "--config", cfg, "--json", "--timeout", "0", "true")
	require.Equal(t, 0, code)
	assert.Equal(t, int64(3000), decode[bashResult](t, out).TimeoutMs, "--timeout 0: none of its own, the cap applies")

	code, out, errOut := bashCLI(t, context.Background(), "", "--config", cfg, "--timeout", "20s", "sleep 1000 & echo up")
	require.Equal(t, 0, code)
	assert.Contains(t, errOut, "[subkit: --timeout 20s is above maxTimeoutMs; 3s applied]")
	assert.Contains(t, out, "subkit ended them as it exited]")
	assert.NotContains(t, out, "kill ", "no advice to kill what is already ended")

	code, out, _ = bashCLI(t, context.Background(), "", "--json", "--managed-env", "DSH_TASK=7", `echo "$DSH_TASK"`)
	require.Equal(t, 0, code)
	assert.Equal(t, "7\n", decode[bashResult](t, out).Stdout.Tail)
}
