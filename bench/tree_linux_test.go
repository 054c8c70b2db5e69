//go:build linux

package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/procinspect"
	"github.com/subkit/subkit/subprocess"
)

// treeSize is the number of processes of row 6's tree: a bash and 99 sleeps.
const treeSize = 100

// treeScript starts treeSize-1 sleeps and waits for them. On SIGTERM every member dies at once
// (bash, waiting, takes the default action): a cooperative tree.
var treeScript = "for ((i=0;i<" + strconv.Itoa(treeSize-1) + ";i++)); do sleep 1000 & done; wait"

// BenchmarkTerminateTree100 is row 6: end a cooperative 100-process tree, timed from the
// Terminate call to the tree gone (Terminate returns only then), against the same kill by
// hand: kill(-pgid, SIGTERM), wait for the leader, then poll kill(-pgid, 0) every millisecond
// until ESRCH. Spawning the tree and waiting until all 100 members run are untimed.
//
// The two ends differ slightly: subkit calls the tree gone once no member can run (members
// that are zombies awaiting their reaper do not count), the baseline once the group is empty.
// Both sides run with this process as the prompt reaper of orphans (startReaper): without it
// the baseline would wait for pid 1, which on the VM these figures were first taken on reaps
// only every 1.5 to 2 seconds.
//
// Right after the timed end each side probes the group once more; still-present counts the
// iterations in which live members were found (see stillPresent).
func BenchmarkTerminateTree100(b *testing.B) {
	ctx := context.Background()
	b.Run("subkit", func(b *testing.B) {
		startReaper(b)
		svc := newService(b, subprocess.Config{})
		spec := subprocess.Spec{Path: lookPath(b, "bash"), Args: []string{"-c", treeScript},
			Stdout: subprocess.Output{Disposition: subprocess.Discard},
			Stderr: subprocess.Output{Disposition: subprocess.Discard}}
		present := 0
		for b.Loop() {
			b.StopTimer()
			h, err := svc.Spawn(ctx, spec)
			if err != nil {
				b.Fatal(err)
			}
			groupReady(b, h.Pid(), treeSize, "sleep")
			b.StartTimer()

			if err := h.Terminate(ctx); err != nil {
				b.Fatal(err)
			}

			b.StopTimer()
			if stillPresent(b, h.Pid()) {
				present++
			}
			res, err := h.Wait(ctx)
			if err != nil || res.Signal != "SIGTERM" {
				b.Fatalf("leader: %v, signal %q (want SIGTERM: a cooperative tree)", err, res.Signal)
			}
			h.Close()
			b.StartTimer()
		}
		b.ReportMetric(float64(present), "still-present")
	})
	b.Run("baseline", func(b *testing.B) {
		startReaper(b)
		_, env := benchEnv(b)
		bash := lookPath(b, "bash")
		var live *exec.Cmd // a tree not yet seen gone: ended at cleanup on a failure path
		b.Cleanup(func() {
			if live != nil {
				killGroup(live)
			}
		})
		present := 0
		for b.Loop() {
			b.StopTimer()
			cmd := baselineCmd(env, bash, "-c", treeScript)
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			pgid := cmd.Process.Pid
			live = cmd
			groupReady(b, pgid, treeSize, "sleep")
			b.StartTimer()

			if err := unix.Kill(-pgid, unix.SIGTERM); err != nil {
				b.Fatal(err)
			}
			cmd.Wait() // "signal: terminated"
			for !groupGone(pgid) {
				time.Sleep(time.Millisecond)
			}

			b.StopTimer()
			if stillPresent(b, pgid) {
				present++
			}
			live = nil
			if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGTERM {
				b.Fatalf("leader ended with %v, want SIGTERM", cmd.ProcessState)
			}
			b.StartTimer()
		}
		b.ReportMetric(float64(present), "still-present")
	})
}

// stillPresent probes a group whose end has just been reported (kill(-pgid, 0) gave ESRCH, or
// Terminate or WaitForExit returned) for live members: those mean the end was reported early.
// Zombies do not count: subkit calls a tree gone once no member can run any more, though
// orphaned members may still await their reaper. It logs what it found, waits (bounded) until
// no live member is left, and returns true.
func stillPresent(b *testing.B, pgid int) bool {
	if groupGone(pgid) {
		return false
	}
	live := func() []string {
		tab, _ := procinspect.Snapshot(context.Background())
		var desc []string
		for _, p := range tab.Group(pgid) {
			if !p.Zombie {
				desc = append(desc, fmt.Sprintf("%d (ppid %d, %s)", p.Pid, p.PPid, p.Comm))
			}
		}
		return desc
	}
	desc := live()
	if len(desc) == 0 {
		return false
	}
	t0 := time.Now()
	for len(live()) > 0 && time.Since(t0) < 5*time.Second {
		time.Sleep(100 * time.Microsecond)
	}
	b.Logf("group %d still had live members after its end was reported: %v; gone %v later",
		pgid, desc, time.Since(t0).Round(time.Microsecond))
	return true
}

// exitScript leaves a tree whose last member is not the leader: bash starts a subshell and
// exits; the subshell sleeps $2 seconds, then becomes date, which writes the CLOCK_REALTIME
// time in nanoseconds to $1 and exits, ending the tree.
const exitScript = `( sleep "$2"; exec date +%s%N >"$1" ) &`

// BenchmarkExitDetection is row 7: how long after the last member of a tree exits
// WaitForExit returns. Each iteration spawns exitScript and calls WaitForExit at once; the
// latency is from date's timestamp to WaitForExit returning, reported as exit-ms (the median
// of the run's iterations) and exit-p90-ms. ns/op is the whole iteration (spawn, a 30-38 ms
// sleep, detection) and means nothing here. The sleep is jittered over 8 ms (the longest
// probe interval) so the exit lands at every phase of the liveness probes.
//
// The last member is an orphan, re-parented to pid 1 (no subreaper here): its exit is what
// WaitForExit must notice, whether or not pid 1 has reaped it yet. still-present counts the
// iterations that still had a live member right after WaitForExit returned.
func BenchmarkExitDetection(b *testing.B) {
	ctx := context.Background()
	b.Run("subkit", func(b *testing.B) {
		svc := newService(b, subprocess.Config{})
		stamp := filepath.Join(b.TempDir(), "stamp")
		bash := lookPath(b, "bash")
		var lat []float64
		present := 0
		for b.Loop() {
			delay := 0.030 + 0.008*rand.Float64()
			h, err := svc.Spawn(ctx, subprocess.Spec{Path: bash,
				Args:   []string{"-c", exitScript, "bash", stamp, strconv.FormatFloat(delay, 'f', 4, 64)},
				Stdout: subprocess.Output{Disposition: subprocess.Discard},
				Stderr: subprocess.Output{Disposition: subprocess.Discard}})
			if err != nil {
				b.Fatal(err)
			}
			if err := h.WaitForExit(ctx); err != nil {
				b.Fatal(err)
			}
			now := time.Now().UnixNano()

			b.StopTimer()
			if stillPresent(b, h.Pid()) {
				present++
			}
			data, err := os.ReadFile(stamp)
			if err != nil {
				b.Fatal(err)
			}
			at, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
			if err != nil {
				b.Fatalf("stamp %q: %v", data, err)
			}
			lat = append(lat, float64(now-at)/1e6)
			if err := os.Remove(stamp); err != nil {
				b.Fatal(err)
			}
			h.Close()
			b.StartTimer()
		}
		slices.Sort(lat)
		b.ReportMetric(quantile(lat, 0.5), "exit-ms")
		b.ReportMetric(quantile(lat, 0.9), "exit-p90-ms")
		b.ReportMetric(float64(present), "still-present")
	})
}

// quantile of sorted xs by the nearest-rank-with-interpolation rule (the median of an even
// count is the mean of the middle two).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	pos := q * float64(len(xs)-1)
	i := int(pos)
	if i+1 >= len(xs) {
		return xs[len(xs)-1]
	}
	return xs[i] + (pos-float64(i))*(xs[i+1]-xs[i])
}
