//go:build linux

package bench

import (
	"bytes"
	"context"
	"testing"

	"github.com/subkit/subkit/bash"
)

// BenchmarkBashTrue is row 2: one foreground Exec of `true` by a bash Executor (a fresh
// `bash -c true` in a process group of its own, both streams collected, stdin the null device,
// the survivor check after the shell exits), against os/exec `bash -c true` with Setpgid and
// both streams into a bytes.Buffer.
//
// Both sides start from the same marked environment (benchEnv); the Executor then drops the
// bash startup variables and credential-like names and adds its seven model-friendly
// variables (NO_COLOR=1, TERM=dumb, ...), as it does for every command. Both resolve "bash" in
// PATH on every call and run in the benchmark's working directory.
func BenchmarkBashTrue(b *testing.B) {
	ctx := context.Background()
	b.Run("subkit", func(b *testing.B) {
		_, env := benchEnv(b)
		e, err := bash.New(bash.Config{Env: env, TempDir: b.TempDir(), SpillDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			if err := e.Close(); err != nil {
				b.Errorf("close executor: %v", err)
			}
		})
		req := bash.Request{Command: "true"}
		b.ReportAllocs()
		for b.Loop() {
			res, err := e.Exec(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			if !res.Success() || res.Lingering {
				b.Fatalf("exec: exit %d, signal %q, timed out %v, cancelled %v, lingering %v",
					res.ExitCode, res.Signal, res.TimedOut, res.Cancelled, res.Lingering)
			}
		}
	})
	b.Run("baseline", func(b *testing.B) {
		_, env := benchEnv(b)
		b.ReportAllocs()
		for b.Loop() {
			var stdout, stderr bytes.Buffer
			cmd := baselineCmd(env, "bash", "-c", "true")
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
