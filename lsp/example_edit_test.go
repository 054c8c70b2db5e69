//go:build unix

package lsp_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/subkit/subkit/lsp"
	"github.com/subkit/subkit/subprocess"
)

// Text edits, as a rename or a formatting answers them: every range counts in the original
// text, in the negotiated encoding (here UTF-16, where "é" counts 1).
func ExampleApplyTextEdits() {
	text := []byte("héllo := greet(x)\nprint(greet(y))\n")
	edits := []lsp.TextEdit{
		{Range: lsp.Range{Start: lsp.Position{Line: 0, Character: 9}, End: lsp.Position{Line: 0, Character: 14}}, NewText: "salute"},
		{Range: lsp.Range{Start: lsp.Position{Line: 1, Character: 6}, End: lsp.Position{Line: 1, Character: 11}}, NewText: "salute"},
	}
	out, err := lsp.ApplyTextEdits(text, edits, lsp.UTF16)
	fmt.Printf("%s%v\n", out, err)
	// Output:
	// héllo := salute(x)
	// print(salute(y))
	// <nil>
}

// A known server's settings in the shape it reads them, filled into a Config.
func ExampleWithPreset() {
	cfg := lsp.WithPreset(lsp.Config{Path: "pyright"})
	fmt.Println(cfg.Path, cfg.Args, cfg.Settings["python"])
	// Output:
	// pyright-langserver [--stdio] map[analysis:map[diagnosticMode:openFilesOnly typeCheckingMode:standard]]
}

// ApplyEdit writes a WorkspaceEdit (a rename's answer, a code action's edit) to the files
// under the root and to the open documents, after checking all of it.
func ExampleClient_ApplyEdit() {
	svc, err := subprocess.New(subprocess.Config{})
	if err != nil {
		panic(err)
	}
	defer svc.Close()
	root, _ := os.MkdirTemp("", "lsp-example-")
	defer os.RemoveAll(root)
	file := filepath.Join(root, "a.txt")
	os.WriteFile(file, []byte("hello world\n"), 0o644)

	ctx := context.Background()
	c, err := lsp.Start(ctx, svc, lsp.Config{Path: fakeServer, Root: root})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	res, err := c.ApplyEdit(ctx, lsp.WorkspaceEdit{Changes: map[string][]lsp.TextEdit{
		lsp.FileURI(file): {{Range: lsp.Range{Start: lsp.Position{Character: 6}, End: lsp.Position{Character: 11}}, NewText: "there"}},
	}})
	b, _ := os.ReadFile(file)
	fmt.Printf("%d file(s) changed, err %v: %s", len(res.Changed), err, b)
	_, err = c.ApplyEdit(ctx, lsp.WorkspaceEdit{Changes: map[string][]lsp.TextEdit{lsp.FileURI("/etc/hosts"): {{NewText: "x"}}}})
	fmt.Println(errors.Is(err, lsp.ErrOutsideRoot))
	// Output:
	// 1 file(s) changed, err <nil>: hello there
	// true
}
