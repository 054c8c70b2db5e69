//go:build linux

package bench

import (
	"context"
	"testing"

	"github.com/subkit/subkit/sandbox"
	"github.com/subkit/subkit/subprocess"
)

// BenchmarkSandboxedSpawnTrue is row 17: spawn /bin/true and settle (both streams collected)
// confined by the default policy with the backend the probe picks, against the same Spawn +
// Wait unconfined. The confined spawn adds the helper's exec and its self-restriction
// (Landlock rules, the seccomp filter, limits).
func BenchmarkSandboxedSpawnTrue(b *testing.B) {
	work := b.TempDir()
	for _, side := range []struct {
		name   string
		policy *sandbox.Policy
	}{{"subkit", &sandbox.Policy{Writable: []string{work}}}, {"baseline", nil}} {
		b.Run(side.name, func(b *testing.B) {
			svc := newService(b, subprocess.Config{Sandbox: side.policy})
			spec := subprocess.Spec{Path: truePath, Dir: work}
			b.ReportAllocs()
			for b.Loop() {
				res, err := subprocess.Run(context.Background(), svc, spec)
				if err != nil || !res.Success() {
					b.Fatalf("run: %v, %+v", err, res.Err())
				}
			}
		})
	}
}
