//go:build linux

package bench

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/subkit/subkit/shell"
	"github.com/subkit/subkit/subprocess"
)

// BenchmarkShellTrue is row 16: the latency of `true` in a warm shell session (Session.Run of
// `true`: the command file written, the line typed into the pty, bash sourcing it, the prompt
// marker read back and removed, the Step taken), against a fresh `bash -c true` per call by
// os/exec with Setpgid and both streams into a bytes.Buffer (row 2's baseline). `true` is plain
// words, so Run skips the `bash -n` syntax check; the session was opened before the timer.
//
// Both sides start from the same marked environment (benchEnv) and resolve bash once per
// session (subkit) or per call (baseline, as os/exec does).
func BenchmarkShellTrue(b *testing.B) {
	ctx := context.Background()
	b.Run("subkit", func(b *testing.B) {
		svc := newService(b, subprocess.Config{})
		s, err := shell.Open(ctx, shell.Config{Service: svc})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			if err := s.Close(); err != nil {
				b.Errorf("close session: %v", err)
			}
		})
		b.ReportAllocs()
		for b.Loop() {
			st, err := s.Run(ctx, "true", time.Minute)
			if err != nil {
				b.Fatal(err)
			}
			if st.State != shell.StateCompleted || st.ExitCode != 0 {
				b.Fatalf("run true: %+v", st)
			}
		}
	})
	b.Run("baseline", func(b *testing.B) {
		_, env := benchEnv(b)
		b.ReportAllocs()
		for b.Loop() {
			var stdout, stderr bytes.Buffer
			cmd := baselineCmd(env, "bash", "-c", "true")
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkShellREPLLine is row 19: a python REPL line typed into a warm shell session, from
// the keystrokes to the Step that returns with the answer and the next prompt
// (Session.Write of "1+1\n" with a 30 s yield, returned as waiting_for_input once python is
// blocked reading the terminal again and its output has been quiet for Config.InputSettle),
// against the codex-style fixed yield: the same line written to `python3 -q` on a pty of its
// own (creack/pty), then a fixed 250 ms wait before the output is read (and another while the
// answer has not come).
func BenchmarkShellREPLLine(b *testing.B) {
	ctx := context.Background()
	python := lookPath(b, "python3")
	b.Run("subkit", func(b *testing.B) {
		svc := newService(b, subprocess.Config{})
		s, err := shell.Open(ctx, shell.Config{Service: svc})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			if err := s.Close(); err != nil {
				b.Errorf("close session: %v", err)
			}
		})
		st, err := s.Run(ctx, python+" -q", time.Minute)
		if err != nil || st.State != shell.StateWaitingInput {
			b.Fatalf("start python: %+v, %v", st, err)
		}
		for b.Loop() {
			st, err := s.Write(ctx, "1+1\n", 30*time.Second)
			if err != nil {
				b.Fatal(err)
			}
			if st.State != shell.StateWaitingInput || !strings.Contains(st.Output, "2\n>>> ") {
				b.Fatalf("1+1: %+v", st)
			}
		}
	})
	b.Run("baseline", func(b *testing.B) {
		_, env := benchEnv(b)
		cmd := exec.Command(python, "-q")
		cmd.Env = append(env, "TERM=dumb")
		ptm, err := pty.Start(cmd)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			ptm.Close()
		})
		out := make(chan []byte, 64)
		go func() {
			for {
				buf := make([]byte, 4096)
				n, err := ptm.Read(buf)
				if n > 0 {
					out <- buf[:n]
				}
				if err != nil {
					close(out)
					return
				}
			}
		}()
		drain := func() string {
			var got strings.Builder
			for {
				select {
				case p := <-out:
					got.Write(p)
				default:
					return got.String()
				}
			}
		}
		time.Sleep(250 * time.Millisecond) // the fixed yield: the banner and prompt
		drain()
		for b.Loop() {
			if _, err := ptm.Write([]byte("1+1\n")); err != nil {
				b.Fatal(err)
			}
			// The fixed yield, again while the answer has not come (a loaded machine): the
			// model would poll with another yield.
			var got strings.Builder
			for yields := 0; !strings.Contains(got.String(), "2\r\n>>> "); yields++ {
				if yields == 240 {
					b.Fatalf("1+1: no answer after a minute: %q", got.String())
				}
				time.Sleep(250 * time.Millisecond)
				got.WriteString(drain())
			}
		}
	})
}
