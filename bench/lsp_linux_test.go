//go:build linux

package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/lsp"
	"github.com/subkit/subkit/subprocess"
)

// lspRequests is the number of sequential requests in one op of row 10.
const lspRequests = 1000

// echoParams is the small payload of every request of row 10: the fake server's test/echo
// returns its params as the result.
type echoParams struct {
	Seq int64 `json:"seq"`
}

// BenchmarkLSPRequests1000 is row 10: one op is 1,000 sequential requests to the lsp package's
// fake server (lsp/testdata/fakeserver), each sent only once the previous one is answered.
// The method is test/echo, which the server answers from its read loop with its params as
// the result; the params are {"seq":N}.
//
// subkit: lsp.Client.Call with a params struct, the result decoded into the same struct and
// checked. baseline: the same server program, started with os/exec (Setpgid, stdin and
// stdout pipes), driven by hand: each request is a Content-Length frame written in one write
// to its stdin, and its answer is read back from its stdout by parsing the header and reading
// the body, checking only that it answers this request's id; no JSON is encoded or decoded.
// The baseline is thus the floor for 1,000 round trips through a pipe pair to that process.
//
// Both sides report ns/req (the op's time over 1,000); launch, initialize (subkit only) and
// shutdown are untimed.
func BenchmarkLSPRequests1000(b *testing.B) {
	fake := buildFakeServer(b)
	b.Run("subkit", func(b *testing.B) {
		svc := newService(b, subprocess.Config{})
		ctx := context.Background()
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		c, err := lsp.Start(sctx, svc, lsp.Config{Path: fake, Root: b.TempDir(), Grace: 500 * time.Millisecond})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { // before the Service's Close, registered earlier
			sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			exit, err := c.Shutdown(sctx)
			if err != nil || exit.Ended != lsp.EndedClean {
				b.Errorf("shutdown: %v, ended %v, exit %d", err, exit.Ended, exit.ExitCode)
			}
		})
		var seq int64
		requests := 0
		b.ReportAllocs()
		for b.Loop() {
			for range lspRequests {
				seq++
				var got echoParams
				if err := c.Call(ctx, "test/echo", echoParams{Seq: seq}, &got); err != nil {
					b.Fatal(err)
				}
				if got.Seq != seq {
					b.Fatalf("echo %d came back as %d", seq, got.Seq)
				}
			}
			requests += lspRequests
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(requests), "ns/req")
	})
	b.Run("baseline", func(b *testing.B) {
		_, env := benchEnv(b)
		s := startRawServer(b, env, fake)
		var seq int64
		requests := 0
		b.ReportAllocs()
		for b.Loop() {
			for range lspRequests {
				seq++
				s.echo(b, seq)
			}
			requests += lspRequests
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(requests), "ns/req")
	})
}

// buildFakeServer builds lsp/testdata/fakeserver into the benchmark's temp dir, as the lsp
// tests do, and returns its path.
func buildFakeServer(b *testing.B) string {
	b.Helper()
	out := filepath.Join(b.TempDir(), "fakeserver")
	// go test puts its own GOROOT/bin first in PATH.
	cmd := exec.Command(lookPath(b, "go"), "build", "-o", out, "./lsp/testdata/fakeserver")
	cmd.Dir = ".." // go test runs in the package directory, bench/
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("building the fake server: %v\n%s", err, msg)
	}
	return out
}

// rawServer is the baseline's connection to the fake server: its stdin and a buffered
// reader on its stdout, with the buffers every round trip reuses.
type rawServer struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	req   []byte // the body being written
	frame []byte // its frame
	body  []byte // the body being read
	want  []byte // the start of the expected answer
}

// startRawServer starts the fake server with os/exec and stops it at cleanup with shutdown
// and exit, as a client would.
func startRawServer(b *testing.B, env []string, path string) *rawServer {
	b.Helper()
	cmd := baselineCmd(env, path)
	cmd.Dir = b.TempDir()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	s := &rawServer{cmd: cmd, in: in, out: bufio.NewReader(out)}
	b.Cleanup(func() {
		if err := s.stop(); err != nil {
			b.Errorf("fake server: %v; stderr: %s", err, stderr.Bytes())
		}
	})
	return s
}

// echo does one test/echo round trip with id and params.seq set to seq.
func (s *rawServer) echo(b *testing.B, seq int64) {
	s.req = append(s.req[:0], `{"jsonrpc":"2.0","id":`...)
	s.req = strconv.AppendInt(s.req, seq, 10)
	s.req = append(s.req, `,"method":"test/echo","params":{"seq":`...)
	s.req = strconv.AppendInt(s.req, seq, 10)
	s.req = append(s.req, "}}"...)
	answer, err := s.call(s.req)
	if err != nil {
		b.Fatalf("request %d: %v", seq, err)
	}
	s.want = strconv.AppendInt(append(s.want[:0], `{"jsonrpc":"2.0","id":`...), seq, 10)
	if !bytes.HasPrefix(answer, s.want) || len(answer) == len(s.want) || answer[len(s.want)] != ',' {
		b.Fatalf("answer to request %d: %s", seq, answer)
	}
}

// write sends body in one frame, header and body in one write.
func (s *rawServer) write(body []byte) error {
	s.frame = strconv.AppendInt(append(s.frame[:0], "Content-Length: "...), int64(len(body)), 10)
	s.frame = append(append(s.frame, "\r\n\r\n"...), body...)
	_, err := s.in.Write(s.frame)
	return err
}

// call writes a request and reads the next frame, its answer (the fake server sends nothing
// unasked to a client that never sent initialized).
func (s *rawServer) call(body []byte) ([]byte, error) {
	if err := s.write(body); err != nil {
		return nil, err
	}
	return s.read()
}

// read reads one frame: header lines up to the empty one, then Content-Length bytes.
func (s *rawServer) read() ([]byte, error) {
	n := -1
	for {
		line, err := s.out.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
			if n, err = strconv.Atoi(string(v)); err != nil {
				return nil, fmt.Errorf("bad header %q", line)
			}
		}
	}
	if n < 0 {
		return nil, fmt.Errorf("frame without Content-Length")
	}
	if cap(s.body) < n {
		s.body = make([]byte, n)
	}
	s.body = s.body[:n]
	_, err := io.ReadFull(s.out, s.body)
	return s.body, err
}

// stopBound bounds the baseline server's polite stop.
const stopBound = 30 * time.Second

// stop sends shutdown and exit, closes stdin, reads stdout to its end and waits for the
// server, which exits with 0. When that fails, or takes longer than stopBound, the server's
// group is killed and reaped, and the error returned.
func (s *rawServer) stop() error {
	pgid := s.cmd.Process.Pid
	t := time.AfterFunc(stopBound, func() { unix.Kill(-pgid, unix.SIGKILL) }) // not yet reaped: still ours
	err := s.polite()
	t.Stop()
	if err != nil {
		killGroup(s.cmd)
		return err
	}
	return s.cmd.Wait()
}

func (s *rawServer) polite() error {
	if _, err := s.call([]byte(`{"jsonrpc":"2.0","id":0,"method":"shutdown"}`)); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := s.write([]byte(`{"jsonrpc":"2.0","method":"exit"}`)); err != nil {
		return fmt.Errorf("exit: %w", err)
	}
	if err := s.in.Close(); err != nil {
		return err
	}
	_, err := io.Copy(io.Discard, s.out)
	return err
}
