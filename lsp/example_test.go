//go:build unix

package lsp_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/subkit/subkit/lsp"
	"github.com/subkit/subkit/subprocess"
)

// The example talks to the tiny fake server in testdata (built by TestMain into fakeServer),
// so it runs anywhere; put "gopls" or any other server in Config.Path.
func Example() {
	svc, err := subprocess.New(subprocess.Config{})
	if err != nil {
		panic(err)
	}
	defer svc.Close()
	root, _ := os.MkdirTemp("", "lsp-example-")
	defer os.RemoveAll(root)
	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("all good\nan ERROR here\n"), 0o644)

	ctx := context.Background()
	c, err := lsp.Start(ctx, svc, lsp.Config{Path: fakeServer, Root: root})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	info := c.InitializeResult().ServerInfo
	fmt.Println("server:", info.Name, info.Version)

	path := filepath.Join(root, "notes.txt")
	text, _ := lsp.ReadDocument(path, 0)
	uri := lsp.FileURI(path)
	version, _ := c.Open(ctx, uri, "", string(text))
	set, _ := c.Diagnostics(ctx, uri, version) // waits for the server's word on this version
	for _, d := range set.Diagnostics {
		fmt.Printf("notes.txt:%d:%d: %v: %s\n", d.Range.Start.Line+1, d.Range.Start.Character+1, d.Severity, d.Message)
	}
	held, err := c.Diagnostics(ctx, uri, version, lsp.NoWait) // what is held now, at once
	fmt.Println("held:", len(held.Diagnostics), err)
	h, _ := c.Hover(ctx, uri, lsp.Position{Line: 1, Character: 4})
	fmt.Println("hover:", h.Text())

	exit, err := c.Shutdown(ctx)
	fmt.Println("shutdown:", exit.Ended, exit.ExitCode, err)
	// Output:
	// server: fakeserver 1.0
	// notes.txt:2:4: error: found ERROR
	// held: 1 <nil>
	// hover: `ERROR` at 1:4
	// shutdown: clean 0 <nil>
}

// A crash fails every pending call at once with the exit status and the stderr tail.
func ExampleServerExitError() {
	svc, _ := subprocess.New(subprocess.Config{})
	defer svc.Close()
	c, err := lsp.Start(context.Background(), svc, lsp.Config{Path: fakeServer, Root: os.TempDir()})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	err = c.Call(context.Background(), "test/crash", map[string]any{"code": 2, "stderr": "fatal error: out of memory\n"}, nil)
	if exit, ok := err.(*lsp.ServerExitError); ok {
		fmt.Printf("exit code %d, stderr ends %q\n", exit.ExitCode, exit.Stderr[len(exit.Stderr)-27:])
	}
	<-c.Done()
	report, _ := c.Shutdown(context.Background())
	fmt.Println(report.Ended)
	// Output:
	// exit code 2, stderr ends "fatal error: out of memory\n"
	// crashed
}
