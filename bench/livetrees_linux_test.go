//go:build linux

package bench

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/subkit/subkit/subprocess"
)

// BenchmarkLiveTrees1000 is row 12: the OS threads this process holds while 1,000 trees live.
func BenchmarkLiveTrees1000(b *testing.B) { benchLiveTrees(b, 1000) }

// BenchmarkLiveTrees10000 is row 13: the same with 10,000 trees, past Go's default limit of
// 10,000 threads, at which a thread per tree kills the host.
func BenchmarkLiveTrees10000(b *testing.B) { benchLiveTrees(b, 10000) }

// benchLiveTrees starts n trees (`sleep 1000`, stdio discarded) and reports "threads", this
// process's thread count once all of them run and the count has settled; then it ends them
// (untimed figures: ns/op is the cost of starting and ending n trees).
//
//   - subkit: Service.Spawn of each; the leaders' exits are watched through pidfds in the
//     runtime poller.
//   - baseline: os/exec Start of each (own process group) and a goroutine per tree in
//     cmd.Wait, as a caller of os/exec waits, in a child process whose Go thread limit is
//     raised, so that the baseline can be measured at 10,000.
func benchLiveTrees(b *testing.B, n int) {
	sleep := lookPath(b, "sleep")
	raiseFileLimit(b, n+2048)
	b.Run("subkit", func(b *testing.B) {
		svc := newService(b, subprocess.Config{})
		threads := 0
		for b.Loop() {
			hs := spawnSleeps(b, svc, sleep, n)
			t, err := settledThreads()
			if err != nil {
				b.Fatal(err)
			}
			threads = max(threads, t)
			endTrees(b, hs)
		}
		b.ReportMetric(float64(threads), "threads")
	})
	b.Run("baseline", func(b *testing.B) {
		// In a child process: the threads a baseline makes are never given back, and Go
		// cannot lower its thread limit below them again.
		_, env := benchEnv(b)
		threads := 0
		for b.Loop() {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(env, liveTreesBaselineVar+"="+strconv.Itoa(n))
			out, err := cmd.Output()
			if err != nil {
				b.Fatalf("baseline child: %v", err)
			}
			t, err := strconv.Atoi(strings.TrimSpace(string(out)))
			if err != nil {
				b.Fatalf("baseline child printed %q", out)
			}
			threads = max(threads, t)
		}
		b.ReportMetric(float64(threads), "threads")
	})
}

// spawnSleeps starts n trees of `sleep 1000`, stdio discarded.
func spawnSleeps(b *testing.B, svc *subprocess.Service, sleep string, n int) []*subprocess.Handle {
	b.Helper()
	spec := subprocess.Spec{Path: sleep, Args: []string{"1000"},
		Stdout: subprocess.Output{Disposition: subprocess.Discard},
		Stderr: subprocess.Output{Disposition: subprocess.Discard}}
	hs := make([]*subprocess.Handle, 0, n)
	for range n {
		h, err := svc.Spawn(context.Background(), spec)
		if err != nil {
			b.Fatal(err)
		}
		hs = append(hs, h)
	}
	return hs
}

// endTrees kills the trees and waits until each is gone.
func endTrees(b *testing.B, hs []*subprocess.Handle) {
	b.Helper()
	for _, h := range hs {
		if err := h.Signal(syscall.SIGKILL); err != nil {
			b.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, h := range hs {
		if err := h.WaitForExit(ctx); err != nil {
			b.Fatal(err)
		}
		h.Close()
	}
}

// liveTreesBaselineVar makes the benchmark binary run liveTreesBaseline instead of the
// benchmarks.
const liveTreesBaselineVar = "SUBKIT_BENCH_LIVE_TREES_BASELINE"

// liveTreesBaseline is the baseline of benchLiveTrees, run as a child process: n trees
// started with os/exec, a goroutine per tree in cmd.Wait; it prints the settled thread count
// and returns the exit status.
func liveTreesBaseline(n int) int {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		return 1
	}
	debug.SetMaxThreads(2*n + 1000)
	var wg sync.WaitGroup
	cmds := make([]*exec.Cmd, 0, n)
	defer func() {
		for _, cmd := range cmds {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		wg.Wait()
	}()
	for range n {
		cmd := exec.Command(sleep, "1000")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			return 1
		}
		cmds = append(cmds, cmd)
		wg.Go(func() { cmd.Wait() })
	}
	threads, err := settledThreads()
	if err != nil {
		return 1
	}
	os.Stdout.WriteString(strconv.Itoa(threads) + "\n")
	return 0
}

// settledThreads waits (at most 10 s) until this process's thread count has not grown for
// 100 ms, and returns it.
func settledThreads() (int, error) {
	deadline := time.Now().Add(10 * time.Second)
	last, err := threadCount()
	since := time.Now()
	for err == nil && time.Since(since) < 100*time.Millisecond && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		var n int
		if n, err = threadCount(); n > last {
			last, since = n, time.Now()
		}
	}
	return last, err
}

func threadCount() (int, error) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "Threads:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, errors.New("no Threads line in /proc/self/status")
}

// raiseFileLimit makes room for at least n descriptors (each live tree holds one, its pidfd,
// on either side), raising the hard limit where this process may; it skips the benchmark when
// it cannot.
func raiseFileLimit(b *testing.B, n int) {
	b.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		b.Fatal(err)
	}
	if old.Cur >= uint64(n) {
		return
	}
	lim := syscall.Rlimit{Cur: uint64(n), Max: max(old.Max, uint64(n))}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		b.Skipf("need %d descriptors, RLIMIT_NOFILE is %d/%d and cannot be raised: %v", n, old.Cur, old.Max, err)
	}
	b.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
}
