//go:build linux

package bench

import (
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/subkit/subkit/procinspect"
	"github.com/subkit/subkit/subprocess"
)

// BenchmarkGuardedSpawnTrue is row 14: spawn /bin/true and settle (both streams collected)
// through the Service's guard, against the same Spawn + Wait without a guard.
func BenchmarkGuardedSpawnTrue(b *testing.B) {
	for _, side := range []struct {
		name  string
		guard bool
	}{{"subkit", true}, {"baseline", false}} {
		b.Run(side.name, func(b *testing.B) {
			svc := newService(b, subprocess.Config{Guard: side.guard})
			spec := subprocess.Spec{Path: truePath}
			b.ReportAllocs()
			for b.Loop() {
				h, err := svc.Spawn(context.Background(), spec)
				if err != nil {
					b.Fatal(err)
				}
				if res, err := h.Wait(context.Background()); err != nil || res.ExitCode != 0 {
					b.Fatalf("wait: %v, exit %d", err, res.ExitCode)
				}
			}
		})
	}
}

// BenchmarkGuardMemory1000 is row 15: the guard's resident memory (VmRSS) while 1,000 trees
// (`sleep 1000`, stdio discarded) live under it, reported as guard-MiB; ns/op is the cost of
// starting and ending them.
func BenchmarkGuardMemory1000(b *testing.B) {
	const n = 1000
	sleep := lookPath(b, "sleep")
	raiseFileLimit(b, n+2048)
	b.Run("subkit", func(b *testing.B) {
		svc := newService(b, subprocess.Config{Guard: true})
		rss := 0.0
		for b.Loop() {
			hs := spawnSleeps(b, svc, sleep, n)
			rss = max(rss, guardRSS(b))
			endTrees(b, hs)
		}
		b.ReportMetric(rss, "guard-MiB")
	})
}

// guardRSS is the resident memory, in MiB, of this process's guard child.
func guardRSS(b *testing.B) float64 {
	b.Helper()
	tab, err := procinspect.Snapshot(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	for _, p := range tab.Procs() {
		if p.PPid != os.Getpid() {
			continue
		}
		env, _ := procinspect.Environ(context.Background(), p.Pid)
		if !slices.Contains(env, "SUBKIT_HELPER=guard") {
			continue
		}
		status, err := os.ReadFile("/proc/" + strconv.Itoa(p.Pid) + "/status")
		if err != nil {
			b.Fatal(err)
		}
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
				if err != nil {
					b.Fatal(err)
				}
				return float64(kb) / 1024
			}
		}
	}
	b.Fatal("no guard among this process's children")
	return 0
}
