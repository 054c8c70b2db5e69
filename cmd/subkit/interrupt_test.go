//go:build unix

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
)

// Ctrl-C is 130 and "cancelled" in every command, under --json too.
func TestExecCancelled(t *testing.T) {
	ctx, ready := testutil.CancelOnSignal(t)
	var out, errb strings.Builder
	code := run(ctx, []string{"exec", "--json", "--env", "READY=" + ready, "--", "sh", "-c", `echo started; echo > "$READY"; exec sleep 1000`}, strings.NewReader(""), &out, &errb)
	assert.Equal(t, exitCancelled, code)
	o := decode[execResult](t, out.String())
	assert.True(t, o.Cancelled)
	assert.Equal(t, "SIGTERM", o.Signal)
	assert.Equal(t, "started\n", o.Stdout.Tail)

	ctx, ready = testutil.CancelOnSignal(t)
	out.Reset()
	errb.Reset()
	code = run(ctx, []string{"exec", "--env", "READY=" + ready, "--", "sh", "-c", `echo > "$READY"; exec sleep 1000`}, strings.NewReader(""), &out, &errb)
	assert.Equal(t, exitCancelled, code)
	assert.Contains(t, errb.String(), "interrupted")
}

// A second Ctrl-C ends a tree that ignores SIGTERM at once, without waiting out the grace.
func TestSecondInterruptKillsAtOnce(t *testing.T) {
	script := `trap 'touch "$READY.term"' TERM; trap '' INT; touch "$READY"; while :; do sleep 0.01; done`
	for _, name := range []string{"exec", "bash"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			ready := filepath.Join(dir, "ready")
			args := []string{"exec", "--grace", "1h", "--env", "READY=" + ready, "--", "sh", "-c", script}
			if name == "bash" {
				cfg := filepath.Join(dir, "c.yaml")
				require.NoError(t, os.WriteFile(cfg, []byte("graceMs: 3600000\n"), 0o644))
				args = []string{"bash", "--config", cfg, "--env", "READY=" + ready, script}
			}
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), asCLIVar+"=1", "TMPDIR="+t.TempDir())
			require.NoError(t, cmd.Start())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() {
				cmd.Process.Kill()
				<-done
			})
			exists := func(p string) func() bool {
				return func() bool { _, err := os.Stat(p); return err == nil }
			}
			require.Eventually(t, exists(ready), 20*time.Second, 5*time.Millisecond, "the command did not start")
			require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
			// The first interrupt has the tree sent SIGTERM, which it survives: subkit would wait
			// out the hour. (Two signals sent at once may arrive as one: wait for the first.)
			require.Eventually(t, exists(ready+".term"), 20*time.Second, 5*time.Millisecond, "the first interrupt sent no SIGTERM")
			require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
			select {
			case err := <-done:
				done <- err // for the cleanup
				var ee *exec.ExitError
				require.ErrorAs(t, err, &ee)
				assert.Equal(t, exitCancelled, ee.ExitCode())
			case <-time.After(60 * time.Second):
				cmd.Process.Kill()
				t.Fatal("the second interrupt did not end the tree at once (the grace is an hour)")
			}
		})
	}
}

func TestVersion(t *testing.T) {
	code, out, _ := cli(t, "", "--version")
	require.Equal(t, 0, code)
	assert.True(t, strings.HasPrefix(out, "subkit "), out)
	code, out, _ = cli(t, "", "version", "--json")
	require.Equal(t, 0, code)
	var v versionOutput
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	assert.NotEmpty(t, v.Version)
	assert.Equal(t, "Linux", v.Platform)
	assert.NotEmpty(t, v.Support)
	code, _, _ = cli(t, "", "version", "extra")
	assert.Equal(t, exitUsage, code)
}
