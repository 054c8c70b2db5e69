package subprocess_test

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/posix"
	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/procinspect"
	"github.com/subkit/subkit/subprocess"
)

func TestGuardedSpawn(t *testing.T) {
	svc := newService(t, subprocess.Config{Guard: true})
	res := run(t, svc, sh(`echo out; echo err >&2; exit 3`))
	assert.Equal(t, 3, res.ExitCode)
	assert.Equal(t, "out\n", string(res.Stdout.Tail))
	assert.Equal(t, "err\n", string(res.Stderr.Tail))

	h, err := svc.Spawn(context.Background(), sh(`exec sleep 1000`))
	require.NoError(t, err)
	p, err := procinspect.Lookup(context.Background(), h.Pid())
	require.NoError(t, err)
	assert.Equal(t, h.Pid(), p.Pgid, "the pid is the program's, leading its group")
	require.NoError(t, h.Terminate(ctxT(t, 10*time.Second)))
	res, err = h.Wait(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, "SIGTERM", res.Signal)
	require.NoError(t, h.Close())
}

// The guard is sent each environment as what differs from the last one: every tree still
// gets exactly its own.
func TestGuardedEnvironments(t *testing.T) {
	svc := newService(t, subprocess.Config{Guard: true})
	for _, env := range [][]string{{"A=1", "B=2"}, {"A=1"}, nil, {"B=3", "A=1", "C=4"}, {"A=1", "B=2"}} {
		spec := sh(`env | grep -E '^(A|B|C)=' | sort | tr '\n' ' '`)
		spec.Env = env
		want := slices.Clone(env)
		slices.Sort(want)
		res := run(t, svc, spec)
		assert.Equal(t, strings.Join(want, " "), strings.TrimSpace(string(res.Stdout.Tail)), "env %q", env)
		assert.NotContains(t, string(run(t, svc, sh(`env`)).Stdout.Tail), "SUBKIT_HELPER", "the guard's own environment")
	}
}

func TestGuardNeedsAHelper(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), hostModeVar+"=no-helper")
	out, err := cmd.Output()
	require.NoError(t, err)
	assert.Contains(t, string(out), "invalid argument", "ErrInvalid")
	assert.Contains(t, string(out), "call subprocess.HelperMain() at the top of main", "the error says how to enable it")

	_, err = subprocess.New(subprocess.Config{Guard: true, Helper: "/no/such/helper"})
	assert.ErrorIs(t, err, subprocess.ErrNotFound)
	assert.True(t, strings.Contains(err.Error(), "Config.Helper"), err.Error())
}

// startGuardedHost starts guardedHost and waits until its 55 sleeps run; it returns the host
// and the tag. Whatever the test concludes, nothing tagged outlives it.
func startGuardedHost(t *testing.T) (*exec.Cmd, string) {
	tag := strconv.Itoa(100000 + rand.IntN(800000))
	t.Cleanup(func() {
		for _, pid := range testutil.Tagged(tag) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), hostModeVar+"=guarded", tagVar+"="+tag, "TMPDIR="+t.TempDir())
	out, err := host.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, host.Start())
	t.Cleanup(func() { host.Process.Kill(); host.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err, "host said nothing")
	require.Equal(t, "ready\n", line)
	require.Eventually(t, func() bool { return len(testutil.Tagged(tag)) == 55 }, 10*time.Second, 10*time.Millisecond,
		"the host's 55 sleeps did not all start")
	return host, tag
}

// A host killed with SIGKILL leaves nothing: its guard ends every tree and every process that
// left one, whatever its environment says.
func TestGuardEndsEverythingWhenTheHostIsKilled(t *testing.T) {
	host, tag := startGuardedHost(t)
	guard, err := procinspect.Lookup(context.Background(), guardOf(t, host))
	require.NoError(t, err)
	require.NoError(t, host.Process.Signal(syscall.SIGKILL))
	host.Wait()
	// The guard exits once it has ended everything (or given up on it).
	require.NoError(t, posix.AwaitExit(ctxT(t, 60*time.Second), guard.Identity))
	assert.Empty(t, testutil.Tagged(tag), "survivors of the host's death")
}

// guardOf is the pid of the host's guard.
func guardOf(t *testing.T, host *exec.Cmd) int {
	t.Helper()
	for _, pid := range children(host.Process.Pid) {
		env, _ := procinspect.Environ(context.Background(), pid)
		if slices.Contains(env, "SUBKIT_HELPER=guard") {
			return pid
		}
	}
	t.Fatal("no guard among the host's children")
	return 0
}

// A guard killed first has its trees ended by the host, and the processes it had adopted too,
// by the identities it announced (nothing else finds those in a session of their own with a
// cleared environment); the host's own death then leaves nothing either.
func TestGuardKilledFirst(t *testing.T) {
	host, tag := startGuardedHost(t)
	guardPid := guardOf(t, host)
	require.NoError(t, syscall.Kill(guardPid, syscall.SIGKILL))
	require.Eventually(t, func() bool { return len(testutil.Tagged(tag)) == 0 }, subprocess.DefaultGrace+2*time.Second,
		10*time.Millisecond, "the host did not end the trees of its dead guard")
	require.NoError(t, host.Process.Signal(syscall.SIGKILL))
	host.Wait()
}

func children(pid int) []int {
	tab, err := procinspect.Snapshot(context.Background())
	if err != nil {
		return nil
	}
	var out []int
	for _, p := range tab.Procs() {
		if p.PPid == pid {
			out = append(out, p.Pid)
		}
	}
	return out
}

// Terminate of one guarded tree ends what escaped it and leaves another tree alone; what
// escaped with nothing to attribute it by (a new session and a cleared environment) is ended
// by Close, through the guard that adopted it.
func TestGuardedTerminateAndClose(t *testing.T) {
	svc, err := subprocess.New(subprocess.Config{Guard: true, TempDir: t.TempDir(), SpillDir: t.TempDir()})
	require.NoError(t, err)
	defer svc.Close()
	tagA, tagB, tagC := strconv.Itoa(200000+rand.IntN(99999)), strconv.Itoa(300000+rand.IntN(99999)), strconv.Itoa(400000+rand.IntN(99999))
	t.Cleanup(func() {
		for _, tag := range []string{tagA, tagB, tagC} {
			for _, pid := range testutil.Tagged(tag) {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	spawn := func(script string) *subprocess.Handle {
		h, err := svc.Spawn(context.Background(), quiet(sh(script)))
		require.NoError(t, err)
		return h
	}
	a := spawn(fmt.Sprintf(`setsid sleep %[1]s & (sleep %[1]s &); exec sleep %[1]s`, tagA))
	spawn(fmt.Sprintf(`setsid sleep %[1]s & exec sleep %[1]s`, tagB))
	spawn(fmt.Sprintf(`setsid env -i /bin/sleep %s & exit 0`, tagC))
	require.Eventually(t, func() bool {
		return len(testutil.Tagged(tagA)) == 3 && len(testutil.Tagged(tagB)) == 2 && len(testutil.Tagged(tagC)) == 1
	}, 10*time.Second, 5*time.Millisecond)

	require.NoError(t, a.Terminate(ctxT(t, 10*time.Second)))
	assert.Empty(t, testutil.Tagged(tagA), "Terminate ended the tree and what escaped it")
	assert.Len(t, testutil.Tagged(tagB), 2, "another tree is left alone")
	assert.Len(t, testutil.Tagged(tagC), 1, "an escapee nothing attributes is left to Close")

	require.NoError(t, svc.Close())
	assert.Empty(t, testutil.Tagged(tagB))
	assert.Empty(t, testutil.Tagged(tagC), "Close ended the adopted escapee through the guard")
}
