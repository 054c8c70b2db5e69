//go:build linux

package bench

import (
	"context"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/subkit/subkit/internal/posix"
	"github.com/subkit/subkit/procinspect"
)

// sweepProcs is the number of unrelated live processes row 11 runs among.
const sweepProcs = 1000

// noGroup is a process group id no process is in. A sweep at Terminate skips the tree's own
// group, which is not among the processes here; skipping none keeps every process in play
// (group 0, which kernel threads are in, would drop them).
const noGroup = -1

// BenchmarkCookieSweep1000 is row 11: list the processes carrying a tree's cookie while 1,000
// unrelated processes of this user live. Setup (untimed, once per run): a bash and 1,000
// `sleep 1000` in a group of their own, carrying no cookie, killed and reaped at cleanup; then
// a fresh cookie, made at least one start-token tick (10 ms) after the last of them started,
// as a tree spawned now would get. Every side must find nothing.
//
//   - subkit: posix.Cookie.Find of the fresh cookie; ns/op is the steady state. cold-ms is the
//     first Find after the 1,000 started, which has not seen them before and reads the stat
//     file of each; it is taken once, in the setup, and reported by every run.
//   - baseline: the same question asked the way Find used to, and without the start fence:
//     procinspect.Snapshot, then for every process an os.Stat of /proc/<pid> for its owner and,
//     for each of this user's, procinspect.Environ, read again after a 1 ms pause when empty
//     (which, run as root, every kernel thread is).
//   - baseline-fenced: the former Find exactly, fence included, for the fresh cookie.
//   - subkit-unfenced: posix.Cookie.Find of the same name with start token 0: the baseline's
//     question, every process of this user a candidate.
func BenchmarkCookieSweep1000(b *testing.B) {
	ctx := context.Background()
	root := startTree(b, sweepProcs+1)
	tab, err := procinspect.Snapshot(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var newest uint64
	for _, p := range tab.Group(root.Pid) {
		newest = max(newest, p.Start)
	}
	c, name := freshCookie(b, newest)
	table := new(posix.Table) // what a Service's Finds share
	c.ReadThrough(table)
	unfenced := posix.CookieFromEnv(name + "=0").ReadThrough(table)
	// The first Find after the 1,000 started, once per run of this function (-count repeats
	// each sub-benchmark, not this setup).
	t0 := time.Now()
	if found, err := c.Find(ctx, noGroup); err != nil || len(found) > 0 {
		b.Fatalf("first find: %v, %v (want none)", found, err)
	}
	cold := time.Since(t0)

	b.Run("subkit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			found, err := c.Find(ctx, noGroup)
			if err != nil || len(found) > 0 {
				b.Fatalf("find: %v, %v (want none)", found, err)
			}
		}
		b.ReportMetric(float64(cold)/1e6, "cold-ms")
	})
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			found, err := formerFind(ctx, name, 0, noGroup)
			if err != nil || len(found) > 0 {
				b.Fatalf("find: %v, %v (want none)", found, err)
			}
		}
	})
	b.Run("baseline-fenced", func(b *testing.B) {
		since := tokenOf(b, c)
		b.ReportAllocs()
		for b.Loop() {
			found, err := formerFind(ctx, name, since, noGroup)
			if err != nil || len(found) > 0 {
				b.Fatalf("find: %v, %v (want none)", found, err)
			}
		}
	})
	b.Run("subkit-unfenced", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			found, err := unfenced.Find(ctx, noGroup)
			if err != nil || len(found) > 0 {
				b.Fatalf("find: %v, %v (want none)", found, err)
			}
		}
	})
}

// freshCookie makes a cookie whose start token is above newest, waiting (untimed) for the
// next clock tick when needed, and returns it with its variable's name.
func freshCookie(b *testing.B, newest uint64) (*posix.Cookie, string) {
	b.Helper()
	deadline := time.Now().Add(time.Second)
	for {
		c := posix.NewCookie()
		if tokenOf(b, c) > newest {
			name, _, _ := strings.Cut(c.Env(), "=")
			return c, name
		}
		if time.Now().After(deadline) {
			b.Fatalf("no cookie token above %d within a second", newest)
		}
		time.Sleep(time.Millisecond)
	}
}

// tokenOf is the start token a cookie was made at.
func tokenOf(b *testing.B, c *posix.Cookie) uint64 {
	b.Helper()
	_, v, _ := strings.Cut(c.Env(), "=")
	tok, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		b.Fatalf("cookie %q: %v", c.Env(), err)
	}
	return tok
}

// formerFind is Cookie.Find as it was before it read only what it must: a whole Snapshot,
// then, for each process started at or after since and not in group skip, an os.Stat of
// /proc/<pid> for its owner and, for this user's, procinspect.Environ, read again after a
// 1 ms pause when it came back empty.
func formerFind(ctx context.Context, name string, since uint64, skip int) ([]procinspect.Identity, error) {
	tab, err := procinspect.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	want := name + "="
	uid := os.Getuid()
	var found []procinspect.Identity
	for _, p := range tab.Procs() {
		if p.Start < since || p.Pgid == skip {
			continue
		}
		fi, err := os.Stat("/proc/" + strconv.Itoa(p.Pid))
		if err != nil {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != uid {
			continue
		}
		env, err := procinspect.Environ(ctx, p.Pid)
		if err == nil && len(env) == 0 && !p.Zombie {
			time.Sleep(time.Millisecond)
			env, err = procinspect.Environ(ctx, p.Pid)
		}
		if err != nil {
			continue
		}
		for _, kv := range env {
			if strings.HasPrefix(kv, want) {
				found = append(found, p.Identity)
				break
			}
		}
	}
	return found, nil
}
