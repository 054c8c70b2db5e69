//go:build linux

package bench

import (
	"bytes"
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/subkit/subkit/subprocess"
)

// truePath is the program both sides spawn; absolute, so neither side searches PATH.
const truePath = "/bin/true"

// BenchmarkSpawnTrue is row 1: spawn /bin/true and settle with both output streams collected,
// against os/exec Run with Setpgid and both streams into a bytes.Buffer.
func BenchmarkSpawnTrue(b *testing.B) {
	ctx := context.Background()
	b.Run("subkit", func(b *testing.B) {
		svc := newService(b, subprocess.Config{})
		spec := subprocess.Spec{Path: truePath} // zero Stdout/Stderr: collect both
		b.ReportAllocs()
		for b.Loop() {
			h, err := svc.Spawn(ctx, spec)
			if err != nil {
				b.Fatal(err)
			}
			res, err := h.Wait(ctx)
			if err != nil || res.ExitCode != 0 {
				b.Fatalf("wait: %v, exit %d", err, res.ExitCode)
			}
		}
	})
	b.Run("baseline", func(b *testing.B) {
		_, env := benchEnv(b)
		b.ReportAllocs()
		for b.Loop() {
			var stdout, stderr bytes.Buffer
			cmd := baselineCmd(env, truePath)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// concurrentSpawns is the batch size of row 9.
const concurrentSpawns = 500

// BenchmarkConcurrentSpawn500 is row 9: one op is 500 spawns of /bin/true started at once,
// each settled with both streams collected, against os/exec at the same concurrency. It
// reports spawns/s and fds-left, the descriptors still open once the benchmark has released
// everything (0 when the count is back to its value before the benchmark).
func BenchmarkConcurrentSpawn500(b *testing.B) {
	ctx := context.Background()
	b.Run("subkit", func(b *testing.B) {
		base := countFDs()
		svc := newService(b, subprocess.Config{})
		spec := subprocess.Spec{Path: truePath}
		spawns := 0
		b.ReportAllocs()
		for b.Loop() {
			batch(b, func() error {
				h, err := svc.Spawn(ctx, spec)
				if err != nil {
					return err
				}
				_, err = h.Wait(ctx)
				return err
			})
			spawns += concurrentSpawns
		}
		b.ReportMetric(float64(spawns)/b.Elapsed().Seconds(), "spawns/s")
		if err := svc.Close(); err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(fdsBackTo(base)), "fds-left")
	})
	b.Run("baseline", func(b *testing.B) {
		base := countFDs()
		_, env := benchEnv(b)
		spawns := 0
		b.ReportAllocs()
		for b.Loop() {
			batch(b, func() error {
				var stdout, stderr bytes.Buffer
				cmd := baselineCmd(env, truePath)
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				return cmd.Run()
			})
			spawns += concurrentSpawns
		}
		b.ReportMetric(float64(spawns)/b.Elapsed().Seconds(), "spawns/s")
		b.ReportMetric(float64(fdsBackTo(base)), "fds-left")
	})
}

// batch runs one concurrentSpawns-wide wave of f and fails the benchmark on the first error.
func batch(b *testing.B, f func() error) {
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for range concurrentSpawns {
		wg.Go(func() {
			if err := f(); err != nil {
				failed.CompareAndSwap(nil, &err)
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		b.Fatal(*err)
	}
}
