package subprocess_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/procinspect"
	"github.com/subkit/subkit/sandbox"
	"github.com/subkit/subkit/subprocess"
)

// A sandboxed tree writes only inside its writable roots, keeps its pid through the helper's
// exec, says how it was confined, and works the same under the guard and on a terminal.
func TestSandboxedSpawn(t *testing.T) {
	for _, guard := range []bool{false, true} {
		work := t.TempDir()
		outside := t.TempDir()
		svc := newService(t, subprocess.Config{Guard: guard, Sandbox: &sandbox.Policy{Writable: []string{work}}})
		res := run(t, svc, sh(`touch `+work+`/ok && echo inside; touch `+outside+`/no 2>&1; echo "tmp=$TMPDIR"; touch "$TMPDIR/t" && echo tmp-ok`))
		require.NotNil(t, res.Sandbox, "guard %v", guard)
		assert.NotEmpty(t, res.Sandbox.Backend)
		out := string(res.Stdout.Tail)
		assert.Contains(t, out, "inside\n", "guard %v", guard)
		assert.Contains(t, out, "tmp-ok", "guard %v: the private TMPDIR is writable", guard)
		assert.FileExists(t, filepath.Join(work, "ok"))
		assert.NoFileExists(t, filepath.Join(outside, "no"), "guard %v: a write outside the writable roots", guard)

		// The pid is the program's where the helper execs it in place; else the program is in
		// the tree the pid leads.
		h, err := svc.Spawn(context.Background(), subprocess.Spec{Path: "sleep", Args: []string{"1000"}})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			tab, err := procinspect.Snapshot(context.Background())
			if err != nil {
				return false
			}
			p, ok := tab.Get(h.Pid())
			if res.Sandbox.SamePid || !ok {
				return ok && p.Comm == "sleep"
			}
			return slices.ContainsFunc(tab.Descendants(p.Identity), func(d procinspect.Proc) bool { return d.Comm == "sleep" })
		}, 10*time.Second, 5*time.Millisecond)
		assert.Equal(t, []string{"sleep", "1000"}, h.Argv())
		require.NoError(t, h.Terminate(ctxT(t, 10*time.Second)))
		require.NoError(t, h.Close())

		// A terminal inside the sandbox.
		term, err := svc.SpawnTerminal(context.Background(), subprocess.TerminalSpec{
			Path: "bash", Args: []string{"--norc", "--noprofile", "-i"}, Env: []string{"PS1=$ ", "TERM=dumb"},
			Grace: 500 * time.Millisecond})
		require.NoError(t, err)
		require.NotNil(t, term.Sandbox())
		_, err = term.Write([]byte("touch " + outside + "/t2 || echo denied-$((40+2))\n"))
		require.NoError(t, err)
		screenWait(t, term, "denied-42")
		require.NoError(t, term.Close())
		assert.NoFileExists(t, filepath.Join(outside, "t2"))
	}
}

// A Spec's own policy overrides the Service's; a Service without one runs trees unconfined.
func TestSandboxPerSpec(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	res := run(t, svc, sh(`true`))
	assert.Nil(t, res.Sandbox)
	hidden := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(hidden, []byte("s3cret"), 0o600))
	spec := sh(`cat ` + hidden + ` 2>&1; echo done`)
	spec.Sandbox = &sandbox.Policy{Writable: []string{t.TempDir()}, Hidden: []string{hidden}}
	res = run(t, svc, spec)
	require.NotNil(t, res.Sandbox)
	assert.NotContains(t, string(res.Stdout.Tail), "s3cret")
	assert.True(t, strings.HasSuffix(string(res.Stdout.Tail), "done\n"))

	spec.Sandbox = &sandbox.Policy{Writable: []string{"no-such-dir"}}
	_, err := svc.Spawn(context.Background(), spec)
	assert.ErrorIs(t, err, subprocess.ErrNotFound)
	assert.ErrorContains(t, err, "Policy.Writable[0]")
	spec.Sandbox = &sandbox.Policy{Network: sandbox.Network(9)}
	_, err = svc.Spawn(context.Background(), spec)
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
}
