//go:build linux

package bench

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/subkit/subkit/coderuntime"
	"github.com/subkit/subkit/subprocess"
)

// codeCell is the trivial cell of row 18: one expression, whose value is the result.
const codeCell = "1 + 1\n"

// BenchmarkCodeCell is row 18: a trivial python3 cell (`1 + 1`) in a warm code session
// (Session.Run: the cell sent over the control socket, run by the driver, its main result and
// done message read back, its end markers found in stdout and stderr), against a one-shot
// Runtime.Run of the same code (a fresh interpreter in a fresh private directory per run, the
// prelude that reports errors, both streams collected, the directory removed). Both sides run
// on one Service of their own and check what came back; the session was opened before the
// timer.
//
// python3 is the real interpreter behind any version-manager shim on PATH (a pyenv shim is a
// bash script that would add its own start to every one-shot run).
func BenchmarkCodeCell(b *testing.B) {
	ctx := context.Background()
	python := realPython(b)
	newRuntime := func(b *testing.B) *coderuntime.Runtime {
		rt, err := coderuntime.New(coderuntime.Config{
			Service:      newService(b, subprocess.Config{}),
			Languages:    []coderuntime.Language{coderuntime.Python3},
			Interpreters: map[coderuntime.Language]string{coderuntime.Python3: python},
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { // before the Service's Close, registered earlier
			if err := rt.Close(); err != nil {
				b.Errorf("close runtime: %v", err)
			}
		})
		return rt
	}
	b.Run("subkit", func(b *testing.B) {
		rt := newRuntime(b)
		s, err := rt.NewSession(ctx, coderuntime.SessionConfig{Language: coderuntime.Python3})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			ex, err := s.Run(ctx, coderuntime.Cell{Code: codeCell, Timeout: time.Minute}, coderuntime.Callbacks{})
			if err != nil {
				b.Fatal(err)
			}
			if len(ex.Results) != 1 || ex.Results[0].MIME["text/plain"] != "2" || ex.Error != nil {
				b.Fatalf("cell %q: %+v", codeCell, ex)
			}
		}
	})
	b.Run("baseline", func(b *testing.B) {
		rt := newRuntime(b)
		b.ReportAllocs()
		for b.Loop() {
			res, err := rt.Run(ctx, coderuntime.Request{Language: coderuntime.Python3, Code: "print(" + strings.TrimSpace(codeCell) + ")\n", Timeout: time.Minute})
			if err != nil {
				b.Fatal(err)
			}
			if res.Stdout.Tail != "2\n" || res.ExitCode != 0 {
				b.Fatalf("run: %+v", res)
			}
		}
	})
}

// realPython resolves python3 to the interpreter itself, past a version manager's shim.
func realPython(b *testing.B) string {
	b.Helper()
	p := lookPath(b, "python3")
	out, err := exec.Command(p, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		b.Fatalf("python3: %v", err)
	}
	return strings.TrimSpace(string(out))
}
