//go:build linux

package bench

import (
	"context"
	"strconv"
	"testing"

	"github.com/shirou/gopsutil/v4/process"
	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/procinspect"
)

// snapTreeSize is the number of processes of row 8's tree: a bash and 199 sleeps.
const snapTreeSize = 200

// BenchmarkSnapshotDescendants200 is row 8: list the descendants of the root of a 200-process
// tree, with procinspect.Snapshot then Table.Descendants, against gopsutil/v4: Processes, then
// Ppid and CreateTime of every process, then the same start-fenced breadth-first walk. Both
// sides query the same live tree, built once per run and untimed; both must find all 199
// descendants.
func BenchmarkSnapshotDescendants200(b *testing.B) {
	ctx := context.Background()
	root := startTree(b, snapTreeSize)
	b.Run("subkit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			tab, err := procinspect.Snapshot(ctx)
			if err != nil {
				b.Fatal(err)
			}
			if n := len(tab.Descendants(root)); n != snapTreeSize-1 {
				b.Fatalf("procinspect found %d descendants, want %d", n, snapTreeSize-1)
			}
		}
	})
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			n, err := gopsutilDescendants(ctx, int32(root.Pid))
			if err != nil {
				b.Fatal(err)
			}
			if n != snapTreeSize-1 {
				b.Fatalf("gopsutil found %d descendants, want %d", n, snapTreeSize-1)
			}
		}
	})
}

// gopsutilDescendants counts the descendants of root the way a gopsutil user would: read every
// process's parent and start time, then walk down from root, keeping a child only if it did
// not start before its parent (the fence procinspect applies).
func gopsutilDescendants(ctx context.Context, root int32) (int, error) {
	procs, err := process.ProcessesWithContext(ctx)
	if err != nil {
		return 0, err
	}
	type node struct {
		ppid  int32
		start int64
	}
	nodes := make(map[int32]node, len(procs))
	children := make(map[int32][]int32)
	for _, p := range procs {
		ppid, err := p.PpidWithContext(ctx)
		if err != nil {
			continue // exited meanwhile
		}
		start, err := p.CreateTimeWithContext(ctx)
		if err != nil {
			continue
		}
		nodes[p.Pid] = node{ppid, start}
		if ppid != p.Pid {
			children[ppid] = append(children[ppid], p.Pid)
		}
	}
	if _, ok := nodes[root]; !ok {
		return 0, nil
	}
	n := 0
	seen := map[int32]bool{root: true}
	for queue := []int32{root}; len(queue) > 0; queue = queue[1:] {
		parent := nodes[queue[0]]
		for _, c := range children[queue[0]] {
			if seen[c] || nodes[c].start < parent.start {
				continue
			}
			seen[c] = true
			n++
			queue = append(queue, c)
		}
	}
	return n, nil
}

// startTree starts a bash with size-1 sleep children in a group of its own, waits until they
// all run, and returns the root's identity. At cleanup the sleeps are killed and bash, in
// wait, reaps them and exits: nothing is orphaned.
func startTree(b *testing.B, size int) procinspect.Identity {
	b.Helper()
	_, env := benchEnv(b)
	script := "for ((i=0;i<" + strconv.Itoa(size-1) + ";i++)); do sleep 1000 & done; wait"
	cmd := baselineCmd(env, lookPath(b, "bash"), "-c", script)
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	pgid := cmd.Process.Pid
	var members []procinspect.Proc
	b.Cleanup(func() {
		for _, p := range members {
			if p.Pid != pgid {
				unix.Kill(p.Pid, unix.SIGKILL) // live children of a bash that has not reaped them
			}
		}
		if members == nil {
			unix.Kill(-pgid, unix.SIGKILL)
		}
		cmd.Wait()
	})
	members = groupReady(b, pgid, size, "sleep")
	tab, err := procinspect.Snapshot(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	p, ok := tab.Get(pgid)
	if !ok {
		b.Fatalf("tree root %d is gone", pgid)
	}
	if n := len(tab.Descendants(p.Identity)); n != size-1 {
		b.Fatalf("tree root %d has %d descendants, want %d", pgid, n, size-1)
	}
	return p.Identity
}
