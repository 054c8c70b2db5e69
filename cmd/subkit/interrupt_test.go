//go:build unix

package main

import (
	"encoding/json"
	"fmt"
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
// The command says on FIFOs when it runs and when the first interrupt's SIGTERM reached it;
// the test waits on those lines.
func TestSecondInterruptKillsAtOnce(t *testing.T) {
	script := `trap 'echo > "$READY.term"' TERM; trap '' INT; echo > "$READY"; while :; do sleep 0.01; done`
	for _, name := range []string{"exec", "bash"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			ready := filepath.Join(dir, "ready")
			for _, fifo := range []string{ready, ready + ".term"} {
				require.NoError(t, syscall.Mkfifo(fifo, 0o600))
			}
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
			require.NoError(t, readFIFOLine(ready, done), "the command did not start")
			require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
			// The first interrupt has the tree sent SIGTERM, which it survives: subkit would wait
			// out the hour. (Two signals sent at once may arrive as one: wait for the first.)
			require.NoError(t, readFIFOLine(ready+".term", done), "the first interrupt sent no SIGTERM")
			require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
			select {
			case err := <-done:
				done <- err // for the cleanup
				var ee *exec.ExitError
				require.ErrorAs(t, err, &ee)
				assert.Equal(t, exitCancelled, ee.ExitCode())
			case <-time.After(60 * time.Second): // a bound on a hang, not a measurement
				cmd.Process.Kill()
				t.Fatal("the second interrupt did not end the tree at once (the grace is an hour)")
			}
		})
	}
}

// readFIFOLine waits until a command has written a line to fifo, or has ended (done, whose value
// it puts back).
func readFIFOLine(fifo string, done chan error) error {
	got := make(chan error, 1)
	go func() {
		f, err := os.Open(fifo) // blocks until the command opens it to write
		if err == nil {
			_, err = f.Read(make([]byte, 1))
			f.Close()
		}
		got <- err
	}()
	select {
	case err := <-got:
		return err
	case err := <-done:
		done <- err
		// Open the FIFO to write, which ends the wait above.
		if f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		<-got
		return fmt.Errorf("the command ended first: %v", err)
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
