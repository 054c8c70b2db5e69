//go:build linux

package bench

import (
	"context"
	"io"
	"os"
	"strconv"
	"testing"

	"github.com/subkit/subkit/subprocess"
)

const (
	mib = 1 << 20
	// tailBytes is the collect tail of rows 3 to 5 (64 KiB).
	tailBytes = 64 << 10
)

// producer returns dd writing n MiB of zeros to stdout in 1 MiB writes: a producer fast enough
// that the reading side, the part under test, sets the pace. (head -c writes 8 KiB at a time
// and caps a pipe at about a quarter of what dd reaches, hiding the consumer.)
func producer(b *testing.B, n int) (path string, args []string) {
	return lookPath(b, "dd"), []string{"if=/dev/zero", "bs=1M", "count=" + strconv.Itoa(n), "status=none"}
}

// BenchmarkCollect256MiB is row 3: 256 MiB through a collect stream (64 KiB tail, no spill)
// against os/exec StdoutPipe + io.Copy(io.Discard). MB/s is the figure compared.
func BenchmarkCollect256MiB(b *testing.B) {
	const n = 256
	ctx := context.Background()
	b.Run("subkit", func(b *testing.B) { collectTail(b, ctx, n) })
	b.Run("baseline", func(b *testing.B) {
		_, env := benchEnv(b)
		path, args := producer(b, n)
		b.SetBytes(n * mib)
		b.ReportAllocs()
		for b.Loop() {
			cmd := baselineCmd(env, path, args...)
			out, err := cmd.StdoutPipe()
			if err != nil {
				b.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			got, err := io.Copy(io.Discard, out)
			if err != nil {
				b.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				b.Fatal(err)
			}
			if got != n*mib {
				b.Fatalf("copied %d bytes, want %d", got, n*mib)
			}
		}
	})
}

// collect runs spec to its end and checks the stream's size.
func collect(b *testing.B, ctx context.Context, svc *subprocess.Service, spec subprocess.Spec, want int64) subprocess.Result {
	h, err := svc.Spawn(ctx, spec)
	if err != nil {
		b.Fatal(err)
	}
	res, err := h.Wait(ctx)
	if err != nil || res.ExitCode != 0 {
		b.Fatalf("wait: %v, exit %d", err, res.ExitCode)
	}
	if res.Stdout.TotalBytes != want {
		b.Fatalf("collected %d bytes, want %d", res.Stdout.TotalBytes, want)
	}
	return res
}

// BenchmarkSpill256MiB is row 4: 256 MiB through a collect stream that also spills the whole
// stream to a file (SpillBytes = 256 MiB), against os/exec with stdout set to an *os.File.
// Both sides create their file inside the timed region; removing it is untimed.
func BenchmarkSpill256MiB(b *testing.B) {
	const n = 256
	ctx := context.Background()
	b.Run("subkit", func(b *testing.B) {
		svc := newService(b, subprocess.Config{SpillDir: b.TempDir()})
		path, args := producer(b, n)
		spec := subprocess.Spec{Path: path, Args: args,
			Stdout: subprocess.Output{TailBytes: tailBytes, SpillBytes: n * mib},
			Stderr: subprocess.Output{Disposition: subprocess.Discard}}
		b.SetBytes(n * mib)
		b.ReportAllocs()
		for b.Loop() {
			h, err := svc.Spawn(ctx, spec)
			if err != nil {
				b.Fatal(err)
			}
			res, err := h.Wait(ctx)
			if err != nil || res.ExitCode != 0 || res.Stdout.TotalBytes != n*mib {
				b.Fatalf("wait: %v, exit %d, %d bytes", err, res.ExitCode, res.Stdout.TotalBytes)
			}
			b.StopTimer()
			if res.Stdout.SpillPath == "" {
				b.Fatalf("no spill file: %v", res.Stdout.SpillErr)
			}
			if fi, err := os.Stat(res.Stdout.SpillPath); err != nil || fi.Size() != n*mib {
				b.Fatalf("spill file: %v (%d bytes)", err, sizeOf(fi))
			}
			if err := os.Remove(res.Stdout.SpillPath); err != nil {
				b.Fatal(err)
			}
			if err := os.Remove(h.SpillDir()); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
	b.Run("baseline", func(b *testing.B) {
		_, env := benchEnv(b)
		dir := b.TempDir()
		path, args := producer(b, n)
		b.SetBytes(n * mib)
		b.ReportAllocs()
		for b.Loop() {
			f, err := os.CreateTemp(dir, "stdout-*.log")
			if err != nil {
				b.Fatal(err)
			}
			cmd := baselineCmd(env, path, args...)
			cmd.Stdout = f
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if fi, err := os.Stat(f.Name()); err != nil || fi.Size() != n*mib {
				b.Fatalf("output file: %v (%d bytes)", err, sizeOf(fi))
			}
			if err := os.Remove(f.Name()); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
}

func sizeOf(fi os.FileInfo) int64 {
	if fi == nil {
		return -1
	}
	return fi.Size()
}

// BenchmarkCollect1GiB is row 5: 1 GiB through a collect stream with a 64 KiB tail. The figure
// is B/op, which must stay within 4 MiB + the tail however long the stream: a collect stream
// keeps a bounded tail, never the stream. There is no baseline.
func BenchmarkCollect1GiB(b *testing.B) {
	const n = 1024
	ctx := context.Background()
	b.Run("subkit", func(b *testing.B) { collectTail(b, ctx, n) })
}

// collectTail runs n MiB through a collect stream with a tailBytes tail and no spill, once per
// iteration: the subkit side of rows 3 and 5.
func collectTail(b *testing.B, ctx context.Context, n int) {
	svc := newService(b, subprocess.Config{})
	path, args := producer(b, n)
	spec := subprocess.Spec{Path: path, Args: args,
		Stdout: subprocess.Output{TailBytes: tailBytes},
		Stderr: subprocess.Output{Disposition: subprocess.Discard}}
	b.SetBytes(int64(n) * mib)
	b.ReportAllocs()
	for b.Loop() {
		collect(b, ctx, svc, spec, int64(n)*mib)
	}
}
