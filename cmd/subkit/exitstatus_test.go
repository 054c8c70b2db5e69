//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
)

// Every row of the one exit-status table, for every command it applies to, in text mode and
// (where it differs) under --json.
func TestExitStatusTable(t *testing.T) {
	dir := t.TempDir()
	script := func(body string) string {
		p := filepath.Join(dir, strings.NewReplacer(" ", "_", "/", "_", "'", "").Replace(body)+".txt")
		require.NoError(t, os.WriteFile(p, []byte(body+"\n"), 0o644))
		return p
	}
	sh := func(body string) []string { return []string{"--", "sh", "-c", body} }
	// readySleep tells the test it runs (a line to the FIFO of testutil.CancelOnSignal), then
	// waits to be interrupted.
	const readySleep = `echo > @READY@; sleep 10`
	cases := []struct {
		name      string
		args      []string
		interrupt bool // cancel the context (a Ctrl-C) once the command says it runs (readySleep)
		want      int
	}{
		{"exec status", append([]string{"exec"}, sh("exit 3")...), false, 3},
		{"exec signal", append([]string{"exec"}, sh("kill -TERM $$")...), false, 128 + 15},
		{"exec timeout", append([]string{"exec", "--timeout", "100ms"}, sh("sleep 10")...), false, exitTimeout},
		{"exec interrupted", append([]string{"exec"}, sh(readySleep)...), true, exitCancelled},
		{"exec interrupted json", append([]string{"exec", "--json"}, sh(readySleep)...), true, exitCancelled},
		{"exec ran json", append([]string{"exec", "--json"}, sh("exit 3")...), false, 0},
		{"exec not executable", []string{"exec", "--", "/etc/hostname"}, false, exitNotExec},
		{"exec not found", []string{"exec", "--", "no-such-program-xyz"}, false, exitNotFound},
		{"exec bad dir", []string{"exec", "--dir", "/no/such", "--", "true"}, false, exitUsage},
		{"exec bad flag", []string{"exec", "--bogus"}, false, exitUsage},

		{"bash status", []string{"bash", "exit 3"}, false, 3},
		{"bash signal", []string{"bash", "kill -TERM $$"}, false, 128 + 15},
		{"bash timeout", []string{"bash", "--timeout", "100ms", "sleep 10"}, false, exitTimeout},
		{"bash interrupted", []string{"bash", readySleep}, true, exitCancelled},
		{"bash ran json", []string{"bash", "--json", "exit 3"}, false, 0},
		{"bash bad flag", []string{"bash", "--bogus", "true"}, false, exitUsage},

		{"code status", []string{"code", "--lang", "bash", "exit 3"}, false, 3},
		{"code timeout", []string{"code", "--lang", "bash", "--timeout", "100ms", "sleep 10"}, false, exitTimeout},
		{"code interrupted", []string{"code", "--lang", "bash", readySleep}, true, exitCancelled},
		{"code not found", []string{"code", "--lang", "bash", "--interpreter", "no-such-bash-xyz", "true"}, false, exitNotFound},
		{"code bad flag", []string{"code", "--lang", "cobol", "x"}, false, exitUsage},

		{"term status", append([]string{"term", "--script", script("3")}, sh("read x; exit $x")...), false, 3},
		{"term timeout", append([]string{"term", "--script", script(""), "--timeout", "200ms"}, sh("sleep 10")...), false, exitTimeout},
		{"term interrupted", append([]string{"term", "--script", script("")}, sh(readySleep)...), true, exitCancelled},
		{"term not found", []string{"term", "--script", script(""), "--", "no-such-program-xyz"}, false, exitNotFound},

		{"shell status", []string{"shell", "--script", script("false")}, false, 1},
		{"shell interrupted", []string{"shell", "--script", script(readySleep)}, true, exitCancelled},
		{"shell bad usage", []string{"shell"}, false, exitUsage},

		{"lsp not found", []string{"lsp", "--", "no-such-server-xyz"}, false, exitNotFound},
		{"lsp bad flag", []string{"lsp", "--bogus"}, false, exitUsage},

		{"tree no process", []string{"tree", "999999999"}, false, exitFailure},
		{"tree bad usage", []string{"tree", "x"}, false, exitUsage},
		{"unknown command", []string{"frobnicate"}, false, exitUsage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			leakChecked(t)
			ctx, args := context.Background(), c.args
			if c.interrupt {
				var fifo string
				ctx, fifo = testutil.CancelOnSignal(t)
				args = withReady(t, args, dir, fifo)
			}
			var out, errb strings.Builder
			code := run(ctx, args, strings.NewReader(""), &out, &errb)
			assert.Equal(t, c.want, code, "%v\nstdout: %s\nstderr: %s", c.args, out.String(), errb.String())
		})
	}
}

// withReady is args with @READY@ replaced by fifo, in the arguments and in the script files
// under dir they name (each rewritten to a file of its own).
func withReady(t *testing.T, args []string, dir, fifo string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if strings.HasPrefix(a, dir+string(filepath.Separator)) {
			body, err := os.ReadFile(a)
			require.NoError(t, err)
			a = filepath.Join(t.TempDir(), "script.txt")
			require.NoError(t, os.WriteFile(a, []byte(strings.ReplaceAll(string(body), "@READY@", fifo)), 0o644))
		}
		out[i] = strings.ReplaceAll(a, "@READY@", fifo)
	}
	return out
}
