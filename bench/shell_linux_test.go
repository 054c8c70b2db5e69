//go:build linux

package bench

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/subkit/subkit/shell"
	"github.com/subkit/subkit/subprocess"
)

// BenchmarkShellTrue is row 16: the latency of `true` in a warm shell session (Session.Run of
// `true`: the command file written, the line typed into the pty, bash sourcing it, the prompt
// marker read back and removed, the Step taken), against a fresh `bash -c true` per call by
// os/exec with Setpgid and both streams into a bytes.Buffer (row 2's baseline). `true` is plain
// words, so Run skips the `bash -n` syntax check; the session was opened before the timer.
//
// Both sides start from the same marked environment (benchEnv) and resolve bash once per
// session (subkit) or per call (baseline, as os/exec does).
func BenchmarkShellTrue(b *testing.B) {
	ctx := context.Background()
	b.Run("subkit", func(b *testing.B) {
		svc := newService(b, subprocess.Config{})
		s, err := shell.Open(ctx, shell.Config{Service: svc})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			if err := s.Close(); err != nil {
				b.Errorf("close session: %v", err)
			}
		})
		b.ReportAllocs()
		for b.Loop() {
			st, err := s.Run(ctx, "true", time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			if st.State != shell.StateCompleted || st.ExitCode != 0 {
				b.Fatalf("run true: %+v", st)
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
