//go:build linux

package bench

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/subkit/subkit/lsp"
	"github.com/subkit/subkit/subprocess"
)

// editCount and editDocBytes shape row 21: 50 edits to a 1 MB document.
const (
	editCount    = 50
	editDocBytes = 1 << 20
)

// editDoc is a 1 MiB text of 64-byte lines.
func editDoc() string {
	line := strings.Repeat("x", 63) + "\n"
	return strings.Repeat(line, editDocBytes/len(line))
}

// BenchmarkLSPIncrementalEdits50 is row 21: one op is 50 one-line incremental edits
// (Client.Change with a range) spread through an open 1 MiB document on the fake server,
// which takes incremental changes (-sync=2); the figure that matters is the bytes allocated.
//
// subkit: the client keeps the document in a buffer that each edit changes in place, and
// sends the edit alone. baseline: the same 50 edits kept as a Go string the way the client
// kept them before, each edit converting the text to bytes twice to find its range and
// concatenating the new text (no notification is sent: the baseline is the text bookkeeping
// alone).
func BenchmarkLSPIncrementalEdits50(b *testing.B) {
	doc := editDoc()
	lines := strings.Count(doc, "\n")
	edit := func(i int) lsp.TextChange {
		l := (i * 97) % lines
		return lsp.TextChange{Range: &lsp.Range{Start: lsp.Position{Line: l, Character: 10}, End: lsp.Position{Line: l, Character: 20}},
			Text: "edited-" + string(rune('a'+i%26))}
	}
	b.Run("subkit", func(b *testing.B) {
		fake := buildFakeServer(b)
		svc := newService(b, subprocess.Config{})
		ctx := context.Background()
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		c, err := lsp.Start(sctx, svc, lsp.Config{Path: fake, Args: []string{"-sync=2", "-silent"}, Root: b.TempDir(), Grace: 500 * time.Millisecond})
		cancel()
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		uri := lsp.FileURI(filepath.Join(b.TempDir(), "big.txt"))
		if _, err := c.Open(ctx, uri, "plaintext", doc); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for k := range editCount {
				if _, err := c.Change(ctx, uri, edit(k)); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("baseline", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			text := doc
			for k := range editCount {
				ch := edit(k)
				start, err := lsp.PositionToOffset([]byte(text), ch.Range.Start, lsp.UTF16)
				if err != nil {
					b.Fatal(err)
				}
				end, err := lsp.PositionToOffset([]byte(text), ch.Range.End, lsp.UTF16)
				if err != nil {
					b.Fatal(err)
				}
				text = text[:start] + ch.Text + text[end:]
			}
		}
	})
}

// BenchmarkLSPDiskEditToDiagnostics is row 22: one op is an edit of lib.go on disk (it
// removes, then restores, the function main.go calls) followed by main.go's fresh
// diagnostics, which must show (then clear) the error.
//
// subkit: what subkit mcp's lsp_diagnostics does: a warm gopls (its preset: 250ms
// diagnosticsDelay) watching the root, SyncFiles, then Diagnostics of the open main.go.
// baseline: a cold `gopls check main.go` per question, what an agent runs without a server.
func BenchmarkLSPDiskEditToDiagnostics(b *testing.B) {
	gopls := lookGopls(b)
	root := b.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	write("go.mod", "module example.com/hello\n\ngo 1.26\n")
	write("main.go", "package main\n\nfunc main() { println(Foo()) }\n")
	good, bad := "package main\n\nfunc Foo() int { return 1 }\n", "package main\n\nfunc Bar() int { return 1 }\n"
	write("lib.go", good)
	env := []string{"GOPROXY=off", "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod"}
	b.Run("subkit", func(b *testing.B) {
		svc := newService(b, subprocess.Config{})
		ctx := context.Background()
		cfg := lsp.WithPreset(lsp.Config{Path: gopls, Root: root, Env: env, WatchFiles: true})
		c, err := lsp.Start(ctx, svc, cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		path := filepath.Join(root, "main.go")
		text, err := lsp.ReadDocument(path, 0)
		if err != nil {
			b.Fatal(err)
		}
		uri := lsp.FileURI(path)
		if _, err := c.Open(ctx, uri, "", string(text)); err != nil {
			b.Fatal(err)
		}
		if err := c.WaitReady(ctx, uri); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			for _, step := range []struct {
				text string
				want int
			}{{bad, 1}, {good, 0}} {
				write("lib.go", step.text)
				if err := c.SyncFiles(ctx); err != nil {
					b.Fatal(err)
				}
				set, err := c.Diagnostics(ctx, uri, 1)
				if err != nil {
					b.Fatal(err)
				}
				if len(set.Diagnostics) != step.want {
					b.Fatalf("%d diagnostics, want %d: %+v", len(set.Diagnostics), step.want, set)
				}
			}
		}
	})
	b.Run("baseline", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			for _, step := range []struct {
				text string
				want bool
			}{{bad, true}, {good, false}} {
				write("lib.go", step.text)
				cmd := exec.Command(gopls, "check", filepath.Join(root, "main.go"))
				cmd.Dir, cmd.Env = root, append(os.Environ(), env...)
				out, _ := cmd.CombinedOutput()
				if got := strings.Contains(string(out), "undefined: Foo"); got != step.want {
					b.Fatalf("gopls check: error reported %v, want %v: %s", got, step.want, out)
				}
			}
		}
	})
}

// lookGopls is the gopls `make tools` builds (<repo>/.bin/gopls), else one on PATH.
func lookGopls(b *testing.B) string {
	if p := os.Getenv("SUBKIT_GOPLS"); p != "" {
		return p
	}
	if p, err := filepath.Abs(filepath.Join("..", ".bin", "gopls")); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return lookPath(b, "gopls")
}
