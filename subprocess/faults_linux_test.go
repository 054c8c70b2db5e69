package subprocess_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/subprocess"
)

func TestSpillDirUnusable(t *testing.T) {
	// A spill "directory" under a regular file can never be created.
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o600))
	svc := newService(t, subprocess.Config{SpillDir: filepath.Join(file, "spill")})
	spec := sh(`seq 1 100000`)
	spec.Stdout = subprocess.Output{TailBytes: 100, SpillBytes: 10 << 20}
	res := run(t, svc, spec)
	assert.Equal(t, 0, res.ExitCode, "a lost spill file does not fail the run")
	assert.Empty(t, res.Stdout.SpillPath)
	assert.ErrorContains(t, res.Stdout.SpillErr, "create spill file")
	assert.True(t, res.Stdout.Truncated)
	assert.True(t, bytes.HasSuffix(res.Stdout.Tail, []byte("99999\n100000\n")), "tail %q", res.Stdout.Tail)
}

func TestSpillDirFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a small tmpfs needs root")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", dir).Run() })
	svc := newService(t, subprocess.Config{SpillDir: dir})
	spec := sh(`head -c 1000000 /dev/zero`)
	spec.Stdout = subprocess.Output{TailBytes: 1000, SpillBytes: 10 << 20}
	res := run(t, svc, spec)
	assert.Equal(t, 0, res.ExitCode)
	assert.EqualValues(t, 1000000, res.Stdout.TotalBytes, "the stream is read to its end")
	assert.Empty(t, res.Stdout.SpillPath)
	assert.ErrorIs(t, res.Stdout.SpillErr, syscall.ENOSPC)
	var files []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return nil
	})
	assert.Empty(t, files, "the incomplete spill file is removed")
}

func TestSpawnFailsCleanlyAtTheDescriptorLimit(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	var old syscall.Rlimit
	require.NoError(t, syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old))
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	// Room for one pipe, not for the three a collected spawn needs.
	low := old
	low.Cur = uint64(len(ents) + 2)
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low))
	_, err = svc.Spawn(context.Background(), subprocess.Spec{Path: "true"})
	require.NoError(t, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old))
	require.Error(t, err)
	var se *subprocess.Error
	require.ErrorAs(t, err, &se)
	assert.ErrorIs(t, err, syscall.EMFILE)
	assert.ErrorIs(t, err, subprocess.ErrLimit)
	t.Log(err)
	// NoLeaks checks the descriptor count at cleanup; the Service still works.
	res := run(t, svc, subprocess.Spec{Path: "true"})
	assert.Equal(t, 0, res.ExitCode)
}

func TestStdinNeverReadStillTerminates(t *testing.T) {
	svc := newService(t, subprocess.Config{})
	spec := subprocess.Spec{Path: "sleep", Args: []string{"1000"},
		Stdin: subprocess.Input{Kind: subprocess.InputBytes, Data: make([]byte, 10<<20)},
		Grace: 200 * time.Millisecond}
	h, err := svc.Spawn(context.Background(), spec)
	require.NoError(t, err)
	defer h.Close()
	require.NoError(t, h.Terminate(ctxT(t, 10*time.Second)))
	res, err := h.Wait(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, "SIGTERM", res.Signal)
}

func TestBinaryLineFreeOutput(t *testing.T) {
	// 24 MB of random bytes: big writes, so the pump's reads fill and its buffer grows.
	data := make([]byte, 24<<20)
	rand.Read(data)
	src := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.WriteFile(src, data, 0o600))
	svc := newService(t, subprocess.Config{})
	spec := subprocess.Spec{Path: "cat", Args: []string{src},
		Stdout: subprocess.Output{TailBytes: 4096, SpillBytes: 32 << 20}}
	h, err := svc.Spawn(context.Background(), spec)
	require.NoError(t, err)
	defer h.Close()
	res, err := h.Wait(ctxT(t, 30*time.Second))
	require.NoError(t, err)
	require.NotEmpty(t, res.Stdout.SpillPath)
	all, err := os.ReadFile(res.Stdout.SpillPath)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(data, all), "the spill file is the stream, byte for byte")
	assert.True(t, bytes.Equal(data[len(data)-4096:], res.Stdout.Tail), "the tail is the stream's last bytes")
	d, err := h.ReadOutput(subprocess.Stdout, 7<<20, 1<<20)
	require.NoError(t, err)
	assert.True(t, bytes.Equal(data[7<<20:8<<20], d.Data), "an offset read from the spill")
}
