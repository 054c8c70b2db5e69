package sandbox

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestFileSizeLimit: a 10 GiB write stops at the file-size limit, by SIGXFSZ.
func TestFileSizeLimit(t *testing.T) {
	const limit = 1 << 20
	for _, v := range variants(t) {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t)
			r, rep := v.run(t, Policy{Limits: Limits{FileSizeBytes: limit}},
				w.program("/bin/dd", "if=/dev/zero", "of=big", "bs=1M", "count=10240"))
			if rep.SamePid {
				require.Equal(t, syscall.SIGXFSZ, r.signal, "%+v", r)
			} else {
				require.Equal(t, 128+int(syscall.SIGXFSZ), r.code, "bwrap reports the signal as 128+N: %+v", r)
			}
			fi, err := os.Stat(filepath.Join(w.work, "big"))
			require.NoError(t, err)
			require.Equal(t, int64(limit), fi.Size())
			require.Contains(t, LikelyDenial([]byte(r.stderr), r.status()), "file-size limit")
		})
	}
}

// TestLimitsSet: the other limits are what the program sees (soft and hard), and a CPU-bound
// loop ends by SIGXCPU at the CPU limit.
func TestLimitsSet(t *testing.T) {
	for _, v := range variants(t) {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t)
			lim := Limits{OpenFiles: 77, AddressSpaceBytes: 8 << 30, Processes: 5000}
			r, _ := v.run(t, Policy{Limits: lim}, w.sh(`ulimit -n; ulimit -Hn; ulimit -v; ulimit -Hv; ulimit -p 2>/dev/null || cat /proc/self/limits | grep processes`))
			require.Equal(t, 0, r.code, "%+v", r)
			require.Contains(t, r.stdout, "77\n77\n8388608\n8388608\n", "%+v", r)
			require.Contains(t, r.stdout, "5000")

			r, rep := v.run(t, Policy{Limits: Limits{CPUSeconds: 1}}, w.sh(`while :; do :; done`))
			if rep.SamePid {
				require.Equal(t, syscall.SIGXCPU, r.signal, "%+v", r)
			} else {
				require.Equal(t, 128+int(syscall.SIGXCPU), r.code, "%+v", r)
			}
			require.Contains(t, LikelyDenial([]byte(r.stderr), r.status()), "CPU-time limit")
		})
	}
}

// TestProcessLimit: a fork bomb stops at the process limit. The kernel never applies
// RLIMIT_NPROC to uid 0, so the program runs as a uid of its own (the test needs root to start
// it so); as root, the Report says the limit is not enforced.
func TestProcessLimit(t *testing.T) {
	vs := variants(t)
	if os.Geteuid() != 0 {
		t.Skip("running the program as another uid needs root")
	}
	// A uid no other process uses, so that the per-user count is the sandbox's alone.
	uid := uint32(3_000_000 + os.Getpid()%100_000)
	// The helper and the directories must be reachable by that uid: t.TempDir's are 0700.
	root, err := os.MkdirTemp("", "subkit-sandbox-nproc-")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, os.RemoveAll(root)) })
	// The sleeps outlive the shell, and bwrap's --new-session takes them (and its own init of
	// the pid namespace) out of the group start kills: end everything of the uid.
	t.Cleanup(func() { killUser(t, uid) })
	require.NoError(t, os.Chmod(root, 0o755))
	helper := copyExecutable(t, filepath.Join(root, "helper"))
	work, tmp, home := filepath.Join(root, "work"), filepath.Join(root, "tmp"), filepath.Join(root, "home")
	for _, d := range []string{work, tmp, home} {
		require.NoError(t, os.Mkdir(d, 0o777))
		require.NoError(t, os.Chmod(d, 0o777))
	}
	sb, err := newSandbox(t.Context(), helper, probeOptions{})
	require.NoError(t, err)
	nosec, err := newSandbox(t.Context(), helper, probeOptions{noSeccomp: true})
	require.NoError(t, err)

	const limit, tries = 12, 64
	bomb := fmt.Sprintf(`i=0; while [ $i -lt %d ]; do sleep 1000 >/dev/null 2>&1 & i=$((i+1)); echo started $i; done`, tries)
	prog := Program{Path: "/bin/sh", Args: []string{"sh", "-c", bomb}, Env: []string{"PATH=/usr/bin:/bin"}, Dir: work, TempDir: tmp, Home: home}
	for _, v := range vs {
		t.Run(v.name, func(t *testing.T) {
			s := sb
			if !v.seccomp() {
				s = nosec
			}
			l, err := s.Prepare(&Policy{Backend: v.backend, Limits: Limits{Processes: limit}}, prog)
			require.NoError(t, err)
			require.Contains(t, strings.Join(l.Report.Unenforced, "\n"), "Limits.Processes", "this process is root")
			cred := &syscall.Credential{Uid: uid, Gid: uid}
			if v.backend == Namespaces {
				// Root itself: the pid namespace holds the limit where RLIMIT_NPROC does not,
				// at the smallest pid_max the kernel takes.
				cred = nil
				require.Contains(t, strings.Join(l.Report.Unenforced, "\n"), fmt.Sprintf("lets %d processes", minPidMax-2))
				l, err = s.Prepare(&Policy{Backend: v.backend, Limits: Limits{Processes: limit}},
					Program{Path: "/bin/sh", Args: []string{"sh", "-c", strings.Replace(bomb, fmt.Sprint(tries), "400", 1)},
						Env: prog.Env, Dir: work, TempDir: tmp, Home: home})
				require.NoError(t, err)
				r := start(t, l, work, cred)
				started := strings.Count(r.stdout, "started")
				t.Logf("started %d, stderr %q", started, r.stderr)
				require.Less(t, started, minPidMax-2, "%+v", r)
				require.Greater(t, started, limit, "%+v", r)
				require.NotEqual(t, 0, r.code, "the shell fails to fork: %+v", r)
				return
			}
			r := start(t, l, work, cred)
			started := strings.Count(r.stdout, "started")
			t.Logf("started %d, stderr %q", started, r.stderr)
			require.Less(t, started, limit, "%+v", r)
			require.NotEqual(t, 0, r.code, "the shell fails to fork: %+v", r)
			require.Contains(t, LikelyDenial([]byte(r.stderr), r.status()), "process limit", "%q", r.stderr)
		})
	}
}

// copyExecutable copies the test binary to dst, mode 0755.
func copyExecutable(t *testing.T, dst string) string {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	in, err := os.Open(exe)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
	return dst
}

// killUser kills every process whose real uid is uid, until none is left (a minute at most).
func killUser(t *testing.T, uid uint32) {
	t.Helper()
	want := fmt.Sprintf("Uid:\t%d\t", uid)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(10 * time.Millisecond) {
		ents, err := os.ReadDir("/proc")
		require.NoError(t, err)
		left := 0
		for _, e := range ents {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			st, err := os.ReadFile("/proc/" + e.Name() + "/status")
			if err != nil || !strings.Contains(string(st), want) || strings.Contains(string(st), "State:\tZ") {
				continue
			}
			left++
			_ = syscall.Kill(pid, syscall.SIGKILL) // ESRCH when it just exited: fine
		}
		if left == 0 {
			return
		}
		require.True(t, time.Now().Before(deadline), "%d processes of uid %d outlived SIGKILL for a minute", left, uid)
	}
}
