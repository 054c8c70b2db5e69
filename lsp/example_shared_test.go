//go:build unix

package lsp_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/subkit/subkit/bash"
	"github.com/subkit/subkit/lsp"
	"github.com/subkit/subkit/subprocess"
)

// One Service under a bash executor and a language server: one runtime root (and, with
// Config.Guard, one guard) for the whole program. The adapters end their own trees when they
// are closed and never close the Service: its owner closes it, once.
func Example_sharedService() {
	svc, err := subprocess.New(subprocess.Config{})
	if err != nil {
		panic(err)
	}
	defer svc.Close()
	root, _ := os.MkdirTemp("", "lsp-example-")
	defer os.RemoveAll(root)

	sh, err := bash.New(bash.Config{Service: svc, Cwd: root})
	if err != nil {
		panic(err)
	}
	res, _ := sh.Exec(context.Background(), bash.Request{Command: "printf 'an ERROR here\\n' > notes.txt"})
	fmt.Println("bash exit:", res.ExitCode)

	c, err := lsp.Start(context.Background(), svc, lsp.Config{Path: fakeServer, Root: root})
	if err != nil {
		panic(err)
	}
	path := filepath.Join(root, "notes.txt")
	text, _ := lsp.ReadDocument(path, 0)
	uri := lsp.FileURI(path)
	version, _ := c.Open(context.Background(), uri, "", string(text))
	set, _ := c.Diagnostics(context.Background(), uri, version)
	fmt.Println("diagnostics:", len(set.Diagnostics))

	fmt.Println(c.Close(), sh.Close())
	after, err := subprocess.Run(context.Background(), svc, subprocess.Spec{Path: "true"})
	fmt.Println("the Service still runs trees:", after.Success(), err)
	// Output:
	// bash exit: 0
	// diagnostics: 1
	// <nil> <nil>
	// the Service still runs trees: true <nil>
}
