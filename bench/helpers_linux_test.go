//go:build linux

package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/procinspect"
	"github.com/subkit/subkit/subprocess"
)

// benchEnv returns a fresh process marker and registers the leak checks for it: no marked
// process and no extra descriptor may outlive the benchmark.
func benchEnv(b *testing.B) (mark string, env []string) {
	b.Helper()
	mark = testutil.Mark()
	testutil.NoLeaks(b, mark)
	return mark, testutil.Env(mark)
}

// newService returns a Service whose children carry a fresh leak-check marker, with its
// runtime root (and, unless cfg says otherwise, spill dir) in the benchmark's temp dir. It is
// closed at cleanup; a Close error fails the benchmark.
func newService(b *testing.B, cfg subprocess.Config) *subprocess.Service {
	b.Helper()
	_, env := benchEnv(b)
	cfg.Env = env
	cfg.TempDir = b.TempDir()
	if cfg.SpillDir == "" {
		cfg.SpillDir = b.TempDir()
	}
	svc, err := subprocess.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := svc.Close(); err != nil {
			b.Errorf("close service: %v", err)
		}
	})
	return svc
}

// baselineCmd is the os/exec side of a row: the program in a process group of its own, as
// subkit puts it, with the same marked environment.
func baselineCmd(env []string, path string, args ...string) *exec.Cmd {
	cmd := exec.Command(path, args...)
	cmd.Env = env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// lookPath resolves a program once, outside any timed region.
func lookPath(b *testing.B, name string) string {
	b.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		b.Skipf("%s not found: %v", name, err)
	}
	return p
}

// countFDs is the number of descriptors this process has open.
func countFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents) - 1 // the directory being read
}

// fdsBackTo waits (untimed, at most a few seconds) for the descriptor count to come back to
// base, and returns how many more are open than base (0 when it came back).
func fdsBackTo(base int) int {
	deadline := time.Now().Add(3 * time.Second)
	for {
		n := countFDs()
		if n <= base || time.Now().After(deadline) {
			return n - base
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// groupReady waits until process group pgid has want live members of which want-1 run comm
// (the leader runs something else), or fails the benchmark.
func groupReady(b *testing.B, pgid, want int, comm string) []procinspect.Proc {
	b.Helper()
	deadline := time.Now().Add(30 * time.Second)
	ctx := context.Background()
	for {
		tab, err := procinspect.Snapshot(ctx)
		if err != nil {
			b.Fatal(err)
		}
		var live []procinspect.Proc
		n := 0
		for _, p := range tab.Group(pgid) {
			if p.Zombie {
				continue
			}
			live = append(live, p)
			if p.Comm == comm {
				n++
			}
		}
		if len(live) == want && n == want-1 {
			return live
		}
		if time.Now().After(deadline) {
			leader := "gone"
			if p, ok := tab.Get(pgid); ok {
				leader = fmt.Sprintf("%s, zombie %v", p.Comm, p.Zombie)
			}
			b.Fatalf("group %d: %d live members (%d %s), want %d; leader: %s", pgid, len(live), n, comm, want, leader)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// groupGone reports whether process group pgid has no member left (zombies count, as for
// the kernel).
func groupGone(pgid int) bool {
	return errors.Is(unix.Kill(-pgid, 0), unix.ESRCH)
}

// startReaper makes this process the child subreaper for the rest of the benchmark and reaps
// the orphans it adopts as soon as they exit.
//
// Why: a tree member that outlives its parent is re-parented to the nearest subreaper, else to
// pid 1, and stays a zombie, still a member of its process group for kill(-pgid, 0), until
// that process reaps it. On the VM these figures were first taken on, pid 1 reaps only every
// 1.5 to 2 seconds, so a by-hand kill that polls kill(-pgid, 0) until ESRCH would measure pid
// 1. A container init such as tini reaps at once; this reaper plays that part, for subkit and
// baseline alike.
//
// Only exited children that are not process-group leaders are reaped: every program the
// benchmarks start directly leads its own group (Setpgid) and is reaped by os/exec, which must
// not lose its exit status to us.
func startReaper(b *testing.B) {
	b.Helper()
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		b.Skipf("cannot become a child subreaper: %v", err)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, unix.SIGCHLD)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		// The tick covers a round cut short by a leader os/exec had not reaped yet.
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-sig:
			case <-tick.C:
			case <-stop:
				return
			}
			reapOrphans()
		}
	}()
	b.Cleanup(func() {
		signal.Stop(sig)
		close(stop)
		<-done
		reapOrphans()
		unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
		reapOrphans()
	})
}

var reapMu sync.Mutex

// reapOrphans reaps the exited children of this process that are not process-group leaders.
// It peeks (WNOWAIT) at the next exited child. A leader belongs to os/exec, which reaps it
// within moments: the round waits briefly for that, then gives up (the next SIGCHLD or tick
// retries), so a leader nobody waits for cannot wedge the reaper.
func reapOrphans() {
	reapMu.Lock()
	defer reapMu.Unlock()
	pause, waited := 20*time.Microsecond, time.Duration(0)
	for {
		pid, ok := peekExited()
		if !ok {
			return
		}
		if pgid, err := unix.Getpgid(pid); err == nil && pgid == pid {
			if waited > 20*time.Millisecond {
				return
			}
			time.Sleep(pause)
			waited += pause
			pause = min(2*pause, time.Millisecond)
			continue
		}
		var ws unix.WaitStatus
		unix.Wait4(pid, &ws, unix.WNOHANG, nil)
	}
}

// peekExited returns the pid of an exited, unreaped child, leaving it unreaped.
func peekExited() (int, bool) {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	if err != nil {
		return 0, false // ECHILD: no child at all
	}
	// For SIGCHLD, si_pid is the first field of the union after signo, errno and code, which
	// is pointer-aligned.
	off := uintptr(12)
	if unsafe.Sizeof(uintptr(0)) == 8 {
		off = 16
	}
	pid := int(*(*int32)(unsafe.Add(unsafe.Pointer(&info), off)))
	return pid, pid > 0 // 0: children exist, none has exited
}

// killGroup ends what is left of the group of cmd, started by a baseline and not yet seen
// gone, and reaps its leader. It is for failure paths, at cleanup.
func killGroup(cmd *exec.Cmd) {
	pgid := cmd.Process.Pid
	unix.Kill(-pgid, unix.SIGKILL) // the group has not been seen empty: its id is still ours
	cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for !groupGone(pgid) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}
