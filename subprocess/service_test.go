//go:build unix

package subprocess_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/procinspect"
	"github.com/subkit/subkit/subprocess"
)

func TestCollectBothStreamsAndExitCode(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	res := run(t, svc, sh(`echo out; echo err >&2; exit 3`))
	assert.Equal(t, 3, res.ExitCode)
	assert.Equal(t, "", res.Signal)
	assert.Equal(t, "out\n", string(res.Stdout.Tail))
	assert.Equal(t, "err\n", string(res.Stderr.Tail))
	assert.EqualValues(t, 4, res.Stdout.TotalBytes)
	assert.False(t, res.Stdout.Truncated)
	assert.Empty(t, res.Stdout.SpillPath)
	assert.False(t, res.PipesHeld)
	assert.NotZero(t, res.Pid)
}

func TestSignalledLeader(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	res := run(t, svc, sh(`kill -TERM $$`))
	assert.Equal(t, -1, res.ExitCode)
	assert.Equal(t, "SIGTERM", res.Signal)
}

func TestStdin(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	t.Run("null by default", func(t *testing.T) {
		res := run(t, svc, subprocess.Spec{Path: "cat"})
		assert.Equal(t, 0, res.ExitCode)
		assert.Empty(t, res.Stdout.Tail)
	})
	t.Run("bytes then closed", func(t *testing.T) {
		spec := subprocess.Spec{Path: "cat", Stdin: subprocess.Input{Kind: subprocess.InputBytes, Data: []byte("abc\n")}}
		res := run(t, svc, spec)
		assert.Equal(t, "abc\n", string(res.Stdout.Tail))
	})
	t.Run("pipe", func(t *testing.T) {
		h, err := svc.Spawn(context.Background(), subprocess.Spec{Path: "cat", Stdin: subprocess.Input{Kind: subprocess.InputPipe}})
		require.NoError(t, err)
		defer h.Close()
		_, err = io.WriteString(h.Stdin(), "piped")
		require.NoError(t, err)
		require.NoError(t, h.Stdin().Close())
		res, err := h.Wait(ctxT(t, 10*time.Second))
		require.NoError(t, err)
		assert.Equal(t, "piped", string(res.Stdout.Tail))
	})
	t.Run("bytes never read", func(t *testing.T) {
		// 1 MiB into a child that never reads: the writer must not hold anything.
		spec := subprocess.Spec{Path: "true", Stdin: subprocess.Input{Kind: subprocess.InputBytes, Data: make([]byte, 1<<20)}}
		res := run(t, svc, spec)
		assert.Equal(t, 0, res.ExitCode)
	})
}

func TestPipeAndDiscard(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	h, err := svc.Spawn(context.Background(), subprocess.Spec{
		Path: "bash", Args: []string{"-c", "echo raw; echo gone >&2"},
		Stdout: subprocess.Output{Disposition: subprocess.Pipe},
		Stderr: subprocess.Output{Disposition: subprocess.Discard},
	})
	require.NoError(t, err)
	defer h.Close()
	assert.Nil(t, h.Stderr())
	out, err := io.ReadAll(h.Stdout())
	require.NoError(t, err)
	assert.Equal(t, "raw\n", string(out))
	res, err := h.Wait(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Zero(t, res.Stderr.TotalBytes)
	_, err = h.ReadOutput(subprocess.Stdout, 0, 0)
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
}

// A daemon grandchild holding stdout must not hold the result longer than the grace.
func TestDaemonHoldingPipeCannotHoldResult(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	spec := sh(`sleep 1000 & echo started`)
	spec.Grace = 300 * time.Millisecond
	h, err := svc.Spawn(context.Background(), spec)
	require.NoError(t, err)
	// The daemon sleeps on, holding the pipe: a result at all means the drain gave up on it.
	res, err := h.Wait(ctxT(t, 30*time.Second))
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode)
	assert.True(t, res.PipesHeld)
	assert.Equal(t, "started\n", string(res.Stdout.Tail))

	// A short drain grace returns sooner, whatever the kill grace.
	spec.Grace, spec.DrainGrace = 10*time.Second, 50*time.Millisecond
	h2, err := svc.Spawn(context.Background(), spec)
	require.NoError(t, err)
	defer h2.Close()
	res, err = h2.Wait(ctxT(t, 30*time.Second)) // well within the 10 s kill grace
	require.NoError(t, err)
	assert.True(t, res.PipesHeld)

	// The daemon is still in the group: WaitForExit must not return yet.
	short, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	assert.Error(t, h.WaitForExit(short))
	require.NoError(t, h.Terminate(ctxT(t, 10*time.Second)))
	require.NoError(t, h.WaitForExit(ctxT(t, 10*time.Second)))
}

func TestTerminateEscalatesToKill(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	// The shell and its children ignore SIGTERM.
	spec := sh(`trap '' TERM; sleep 1000 & sleep 1000 & echo ready; wait`)
	spec.Grace = 300 * time.Millisecond
	h, err := svc.Spawn(context.Background(), spec)
	require.NoError(t, err)
	waitFor(t, h, subprocess.Stdout, "ready")
	begin := time.Now()
	require.NoError(t, h.Terminate(ctxT(t, 15*time.Second)))
	assert.GreaterOrEqual(t, time.Since(begin), spec.Grace)
	res, err := h.Wait(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, "SIGKILL", res.Signal)
	require.NoError(t, h.WaitForExit(ctxT(t, time.Second)))
	// A second Terminate on a gone tree is a no-op.
	require.NoError(t, h.Terminate(ctxT(t, time.Second)))
}

func TestTerminateCooperativeTreeBeforeGrace(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	spec := sh(`sleep 1000 & sleep 1000 & echo ready; wait`)
	spec.Grace = 20 * time.Second
	h, err := svc.Spawn(context.Background(), spec)
	require.NoError(t, err)
	waitFor(t, h, subprocess.Stdout, "ready")
	require.NoError(t, h.Terminate(ctxT(t, 15*time.Second)), "ended well within the 20 s grace")
	res, err := h.Wait(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, "SIGTERM", res.Signal, "SIGTERM ended it: no SIGKILL after the grace")
}

func TestWaitForExitWaitsForGroupMembers(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	// The member reads the leader's stdin until the test closes it.
	spec := sh(`exec 3<&0; cat <&3 >/dev/null & exit 0`)
	spec.Stdin.Kind = subprocess.InputPipe
	spec.Stdout.Disposition = subprocess.Discard
	spec.Stderr.Disposition = subprocess.Discard
	h, err := svc.Spawn(context.Background(), spec)
	require.NoError(t, err)
	res, err := h.Wait(ctxT(t, 30*time.Second))
	require.NoError(t, err, "nothing collected, so the result settles at leader exit")
	assert.Equal(t, 0, res.ExitCode)
	exited := make(chan error, 1)
	go func() { exited <- h.WaitForExit(ctxT(t, 30*time.Second)) }()
	members, err := h.Members(context.Background())
	require.NoError(t, err)
	require.NotEmpty(t, members, "the member still reads its stdin")
	select {
	case err := <-exited:
		t.Fatalf("WaitForExit returned (%v) while a member lives", err)
	default:
	}
	require.NoError(t, h.Stdin().Close()) // the member reads end of file and exits
	require.NoError(t, <-exited)
}

func TestTimeout(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	spec := subprocess.Spec{Path: "sleep", Args: []string{"1000"}, Timeout: 200 * time.Millisecond}
	res := run(t, svc, spec)
	assert.True(t, res.TimedOut)
	assert.Equal(t, "SIGTERM", res.Signal)
	assert.GreaterOrEqual(t, res.Duration, 200*time.Millisecond)
}

func TestLargeOutputKeepsMemoryBounded(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	const size = 200_000_000
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	res := run(t, svc, subprocess.Spec{Path: "head", Args: []string{"-c", "200000000", "/dev/zero"}})
	runtime.ReadMemStats(&after)
	assert.EqualValues(t, size, res.Stdout.TotalBytes)
	assert.Len(t, res.Stdout.Tail, subprocess.DefaultTailBytes)
	assert.True(t, res.Stdout.Truncated)
	assert.Empty(t, res.Stdout.SpillPath)
	alloc := after.TotalAlloc - before.TotalAlloc
	assert.Less(t, alloc, uint64(8<<20), "allocated %d bytes for %d bytes of output", alloc, size)
}

func TestSpill(t *testing.T) {
	spillDir := t.TempDir()
	svc := newService(t, subprocess.Config{SpillDir: spillDir})
	// 100000 numbered lines, ~588 KB.
	script := `for ((i=0;i<100000;i++)); do echo "line $i"; done`
	want := bytes.Buffer{}
	for i := 0; i < 100000; i++ {
		want.WriteString("line " + strconv.Itoa(i) + "\n")
	}

	t.Run("whole stream kept", func(t *testing.T) {
		spec := sh(script)
		spec.Stdout = subprocess.Output{TailBytes: 1000, SpillBytes: 10 << 20}
		res := run(t, svc, spec)
		require.NotEmpty(t, res.Stdout.SpillPath)
		assert.True(t, res.Stdout.Truncated)
		assert.Len(t, res.Stdout.Tail, 1000)
		got, err := os.ReadFile(res.Stdout.SpillPath)
		require.NoError(t, err)
		assert.True(t, bytes.Equal(want.Bytes(), got), "spill differs from the stream")
		fi, err := os.Stat(res.Stdout.SpillPath)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		di, err := os.Stat(filepath.Dir(res.Stdout.SpillPath))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), di.Mode().Perm())
		assert.Equal(t, spillDir, filepath.Dir(filepath.Dir(res.Stdout.SpillPath)))
		assert.Empty(t, res.Stderr.SpillPath, "stderr stayed within its tail: no file")
	})
	t.Run("a spill directory of the spec's own", func(t *testing.T) {
		own := t.TempDir()
		var dirs []string
		for range 2 {
			spec := sh(`head -c 5000 /dev/zero`)
			spec.Stdout = subprocess.Output{TailBytes: 1000, SpillBytes: 1 << 20}
			spec.SpillDir = own
			h, err := svc.Spawn(context.Background(), spec)
			require.NoError(t, err)
			res, err := h.Wait(ctxT(t, 10*time.Second))
			require.NoError(t, err)
			require.NoError(t, h.Close())
			require.NotEmpty(t, res.Stdout.SpillPath)
			assert.Equal(t, own, filepath.Dir(filepath.Dir(res.Stdout.SpillPath)))
			assert.Equal(t, filepath.Dir(res.Stdout.SpillPath), h.SpillDir())
			dirs = append(dirs, h.SpillDir())
			os.Remove(res.Stdout.SpillPath)
		}
		assert.Equal(t, dirs[0], dirs[1], "specs naming the same SpillDir share one private directory")
		os.Remove(dirs[0])
		spec := sh(`true`)
		spec.SpillDir = "relative/dir"
		_, err := svc.Spawn(context.Background(), spec)
		assert.ErrorIs(t, err, subprocess.ErrInvalid)
	})
	t.Run("oversize spill dropped", func(t *testing.T) {
		spec := sh(script)
		spec.Stdout = subprocess.Output{TailBytes: 1000, SpillBytes: 100_000}
		res := run(t, svc, spec)
		assert.Empty(t, res.Stdout.SpillPath)
		assert.NoError(t, res.Stdout.SpillErr)
		assert.True(t, res.Stdout.Truncated)
		assert.Equal(t, want.Bytes()[want.Len()-1000:], res.Stdout.Tail)
	})
	t.Run("small output makes no file", func(t *testing.T) {
		dir := t.TempDir()
		svc := newService(t, subprocess.Config{SpillDir: dir})
		spec := sh("echo small")
		spec.Stdout = subprocess.Output{SpillBytes: 1 << 20}
		res := run(t, svc, spec)
		assert.Empty(t, res.Stdout.SpillPath)
		ents, _ := os.ReadDir(dir)
		assert.Empty(t, ents, "the per-process dir is created lazily")
	})
	// Every spill file left is one a result published.
	var files []string
	filepath.WalkDir(spillDir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	assert.Len(t, files, 1, "only the published spill remains: %v", files)
}

func TestOffsetReads(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	script := `for ((i=0;i<2000;i++)); do printf '%05d\n' $i; done`
	var want []byte
	for i := 0; i < 2000; i++ {
		want = append(want, []byte(pad5(i)+"\n")...)
	}
	t.Run("from spill", func(t *testing.T) {
		spec := sh(script)
		spec.Stdout = subprocess.Output{TailBytes: 600, SpillBytes: 1 << 20}
		h, err := svc.Spawn(context.Background(), spec)
		require.NoError(t, err)
		defer h.Close()
		// A consumer's own cursor, reading in small steps while the stream runs.
		var got []byte
		var next int64
		for {
			updated := h.Updated(subprocess.Stdout) // taken before the read, so no write is missed
			d, err := h.ReadOutput(subprocess.Stdout, next, 4096)
			require.NoError(t, err)
			assert.Zero(t, d.Dropped)
			got = append(got, d.Data...)
			next = d.Next
			if d.Done {
				break
			}
			if len(d.Data) == 0 {
				<-updated
			}
		}
		assert.Equal(t, want, got)
		// A full re-read after settlement, from the sealed spill file.
		d, err := h.ReadOutput(subprocess.Stdout, 0, 0)
		require.NoError(t, err)
		assert.Equal(t, want, d.Data)
		assert.True(t, d.Done)
		d, err = h.ReadOutput(subprocess.Stdout, 6*1000, 12)
		require.NoError(t, err)
		assert.Equal(t, "01000\n01001\n", string(d.Data))
		assert.EqualValues(t, 6*1002, d.Next)
		_, err = h.ReadOutput(subprocess.Stdout, int64(len(want))+1, 0)
		assert.ErrorIs(t, err, subprocess.ErrInvalid)
	})
	t.Run("tail only reports dropped bytes", func(t *testing.T) {
		spec := sh(script)
		spec.Stdout = subprocess.Output{TailBytes: 600}
		h, err := svc.Spawn(context.Background(), spec)
		require.NoError(t, err)
		defer h.Close()
		_, err = h.Wait(ctxT(t, 10*time.Second))
		require.NoError(t, err)
		d, err := h.ReadOutput(subprocess.Stdout, 0, 0)
		require.NoError(t, err)
		assert.EqualValues(t, len(want)-600, d.Dropped)
		assert.EqualValues(t, len(want)-600, d.From)
		assert.Equal(t, want[len(want)-600:], d.Data)
		assert.True(t, d.Done)
	})
}

func pad5(i int) string {
	s := strconv.Itoa(i)
	return strings.Repeat("0", 5-len(s)) + s
}

func TestEnvScrubAndMerge(t *testing.T) {
	host := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=/home/x", "GITHUB_TOKEN=t", "aws_secret_access_key=s",
		"DB_PASSWORD=p", "MYSQL_PWD_PASSWD=p", "GOOGLE_APPLICATION_CREDENTIALS=/c", "API_KEY=k",
		"KEYBOARD_LAYOUT=us", "DSH_SESSION=old", "PLAIN=1",
	}
	svc := newService(t, subprocess.Config{Env: host, AllowEnv: []string{"KEYBOARD_LAYOUT"}})
	spec := subprocess.Spec{Path: "env", Env: []string{"PLAIN=2", "DSH_SESSION=new", "EXTRA=x"}}
	res := run(t, svc, spec)
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(res.Stdout.Tail)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	for _, gone := range []string{"GITHUB_TOKEN", "aws_secret_access_key", "DB_PASSWORD", "MYSQL_PWD_PASSWD", "GOOGLE_APPLICATION_CREDENTIALS", "API_KEY"} {
		assert.NotContains(t, got, gone)
	}
	assert.Equal(t, "us", got["KEYBOARD_LAYOUT"], "allow-listed")
	assert.Equal(t, "2", got["PLAIN"], "explicit env wins")
	assert.Equal(t, "new", got["DSH_SESSION"], "explicit managed names are allowed")
	assert.Equal(t, "x", got["EXTRA"])
	assert.Equal(t, "/home/x", got["HOME"])
	for _, kv := range svc.Env() {
		assert.False(t, strings.HasPrefix(kv, "DSH_"), kv)
	}
}

func TestResolveExecutable(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\necho hi\n"), mode))
		return p
	}
	exe := write("tool", 0o755)
	write("noexec", 0o644)
	svc := newService(t, subprocess.Config{Env: []string{"PATH=.:relative:" + dir + ":/usr/bin:/bin"}})

	got, err := svc.ResolveExecutable("tool")
	require.NoError(t, err)
	assert.Equal(t, exe, got)
	got, err = svc.ResolveExecutable(exe)
	require.NoError(t, err)
	assert.Equal(t, exe, got)

	_, err = svc.ResolveExecutable("no-such-tool-xyz")
	require.ErrorIs(t, err, subprocess.ErrNotFound)
	assert.Contains(t, err.Error(), dir, "the error names the PATH searched")
	assert.NotContains(t, err.Error(), "relative", "relative PATH entries are not searched")

	_, err = svc.ResolveExecutable("noexec")
	assert.ErrorIs(t, err, subprocess.ErrPermission)
	_, err = svc.ResolveExecutable(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, subprocess.ErrNotFound)
	_, err = svc.ResolveExecutable(dir)
	assert.ErrorIs(t, err, subprocess.ErrPermission)
	_, err = svc.ResolveExecutable("")
	assert.ErrorIs(t, err, subprocess.ErrInvalid)

	// The spec's PATH is the one searched.
	_, err = svc.Spawn(context.Background(), subprocess.Spec{Path: "tool", Env: []string{"PATH=/nonexistent"}})
	require.ErrorIs(t, err, subprocess.ErrNotFound)
	var se *subprocess.Error
	require.True(t, errors.As(err, &se))
	assert.Equal(t, "resolve", se.Op)
	assert.Equal(t, "tool", se.Name)
}

func TestSpawnErrors(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	cases := map[string]struct {
		spec subprocess.Spec
		kind error
	}{
		"no path":         {subprocess.Spec{}, subprocess.ErrInvalid},
		"negative grace":  {subprocess.Spec{Path: "true", Grace: -1}, subprocess.ErrInvalid},
		"negative tail":   {subprocess.Spec{Path: "true", Stdout: subprocess.Output{TailBytes: -1}}, subprocess.ErrInvalid},
		"tail on discard": {subprocess.Spec{Path: "true", Stdout: subprocess.Output{Disposition: subprocess.Discard, TailBytes: 5}}, subprocess.ErrInvalid},
		"bad env":         {subprocess.Spec{Path: "true", Env: []string{"NOEQUALS"}}, subprocess.ErrInvalid},
		"missing dir":     {subprocess.Spec{Path: "true", Dir: "/nonexistent-dir"}, subprocess.ErrNotFound},
		"not found":       {subprocess.Spec{Path: "definitely-not-a-program"}, subprocess.ErrNotFound},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := svc.Spawn(context.Background(), c.spec)
			require.ErrorIs(t, err, c.kind)
			t.Log(err)
		})
	}
	t.Run("script with missing interpreter", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "s")
		require.NoError(t, os.WriteFile(p, []byte("#!/nonexistent/interp\n"), 0o755))
		_, err := svc.Spawn(context.Background(), subprocess.Spec{Path: p})
		require.ErrorIs(t, err, subprocess.ErrNotFound)
	})
	t.Run("not a program", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "s")
		require.NoError(t, os.WriteFile(p, []byte("\x00\x01garbage"), 0o755))
		_, err := svc.Spawn(context.Background(), subprocess.Spec{Path: p})
		require.ErrorIs(t, err, subprocess.ErrPermission)
	})
}

func TestCloseEndsTreesAndRuntimeRoot(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	root := svc.RuntimeRoot()
	fi, err := os.Stat(root)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	spec := sh(`trap '' TERM; sleep 1000 & echo ready; wait`)
	spec.Grace = 200 * time.Millisecond
	h, err := svc.Spawn(context.Background(), spec)
	require.NoError(t, err)
	waitFor(t, h, subprocess.Stdout, "ready")
	require.NoError(t, svc.Close())
	require.NoError(t, svc.Close(), "closing twice is safe")
	res, err := h.Wait(ctxT(t, time.Second))
	require.NoError(t, err)
	assert.Equal(t, "SIGKILL", res.Signal)
	_, err = os.Stat(root)
	assert.True(t, os.IsNotExist(err))
	_, err = svc.Spawn(context.Background(), subprocess.Spec{Path: "true"})
	assert.ErrorIs(t, err, subprocess.ErrClosed)
	require.NoError(t, h.Close())
	require.NoError(t, h.Close())
}

func TestCloseRacesSpawnWaitTerminateRead(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	var wg sync.WaitGroup
	spawned := make(chan struct{})
	var once sync.Once
	for i := 0; i < 8; i++ {
		wg.Go(func() {
			for j := 0; j < 5; j++ {
				h, err := svc.Spawn(context.Background(), sh(`echo x; sleep 1000`))
				if err != nil {
					assert.ErrorIs(t, err, subprocess.ErrClosed)
					return
				}
				once.Do(func() { close(spawned) })
				wg.Go(func() { h.ReadOutput(subprocess.Stdout, 0, 0) })
				wg.Go(func() { h.Wait(ctxT(t, 20*time.Second)) })
				wg.Go(func() { h.Terminate(ctxT(t, 20*time.Second)) })
			}
		})
	}
	<-spawned // Close comes while the others still spawn
	require.NoError(t, svc.Close())
	wg.Wait()
}

// A pid reused after the tree is gone must not be signalled. Forcing reuse needs root:
// ns_last_pid makes the kernel hand out the old pid to the next fork.
func TestReusedPidIsNotSignalled(t *testing.T) {
	testutil.CanReusePids(t)
	svc := newService(t, subprocess.Config{})
	h, err := svc.Spawn(context.Background(), subprocess.Spec{Path: "true"})
	require.NoError(t, err)
	defer h.Close()
	require.NoError(t, h.WaitForExit(ctxT(t, 10*time.Second)))
	old := h.Pid()

	stranger := testutil.ProcessWithPid(t, old, &syscall.SysProcAttr{Setpgid: true})
	require.NoError(t, h.Signal(syscall.SIGKILL))
	require.NoError(t, h.Terminate(ctxT(t, 5*time.Second)))
	require.NoError(t, h.Close())
	time.Sleep(50 * time.Millisecond)
	assertAlive(t, stranger.Pid, "the stranger with the reused pid or group %d was signalled", old)
}

// waitFor waits until a collected stream contains text, woken by each arrival of output.
func waitFor(t *testing.T, h *subprocess.Handle, s subprocess.Stream, text string) {
	t.Helper()
	ctx := ctxT(t, 30*time.Second)
	for {
		updated := h.Updated(s) // before the read, so no arrival is missed
		d, err := h.ReadOutput(s, 0, 0)
		require.NoError(t, err)
		if strings.Contains(string(d.Data), text) {
			return
		}
		if d.Done {
			t.Fatalf("%q never appeared on %v: %q", text, s, d.Data)
		}
		select {
		case <-updated:
		case <-ctx.Done():
			t.Fatalf("%q never appeared on %v: %q", text, s, d.Data)
		}
	}
}

// A group that empties while nobody watches can be replaced by a stranger's group with the
// same number; Terminate must not signal it.
func TestReusedGroupIsNotSignalled(t *testing.T) {
	testutil.CanReusePids(t)
	svc := newService(t, subprocess.Config{})
	// The leader exits at once; a member keeps the group for a moment, then exits unobserved.
	spec := sh(`sleep 0.3 &`)
	spec.Stdout.Disposition = subprocess.Discard
	spec.Stderr.Disposition = subprocess.Discard
	h, err := svc.Spawn(context.Background(), spec)
	require.NoError(t, err)
	defer h.Close()
	_, err = h.Wait(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	old := h.Pid()
	// Wait (without asking the handle) until no process is in the group any more.
	require.Eventually(t, func() bool {
		return syscall.Kill(-old, 0) == syscall.ESRCH
	}, 20*time.Second, 10*time.Millisecond)

	stranger := testutil.ProcessWithPid(t, old, &syscall.SysProcAttr{Setpgid: true})
	require.NoError(t, h.Terminate(ctxT(t, 10*time.Second)))
	require.NoError(t, h.WaitForExit(ctxT(t, 5*time.Second)), "the stranger's group is not waited for")
	time.Sleep(50 * time.Millisecond)
	assertAlive(t, stranger.Pid, "the stranger with the reused pid or group %d was signalled", old)
}

// assertAlive checks that pid is a live process (a zombie, killed but not reaped, is not).
func assertAlive(t *testing.T, pid int, msg string, args ...any) {
	t.Helper()
	p, err := procinspect.Lookup(context.Background(), pid)
	if assert.NoError(t, err, append([]any{msg}, args...)...) {
		assert.False(t, p.Zombie, append([]any{msg}, args...)...)
	}
}
