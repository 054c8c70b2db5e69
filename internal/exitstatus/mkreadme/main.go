// Command mkreadme writes the subkit command's exit-status table (exitstatus.Markdown) into a
// Markdown file between its markers, leaving the rest of the file as it is.
//
//	go run ./internal/exitstatus/mkreadme -doc README.md
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/subkit/subkit/internal/exitstatus"
)

const (
	beginMark = "<!-- BEGIN EXIT STATUS TABLE (go generate ./cmd/subkit) -->"
	endMark   = "<!-- END EXIT STATUS TABLE -->"
)

func main() {
	doc := flag.String("doc", "", "Markdown file to update between the markers")
	flag.Parse()
	if *doc == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: mkreadme -doc FILE")
		os.Exit(2)
	}
	if err := update(*doc); err != nil {
		fmt.Fprintln(os.Stderr, "mkreadme:", err)
		os.Exit(1)
	}
}

// update rewrites what is between the markers of path, and writes the file only when that
// changes it.
func update(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(data)
	i, j := strings.Index(s, beginMark), strings.Index(s, endMark)
	if i < 0 || j < i {
		return fmt.Errorf("%s: markers %q and %q not found in order", path, beginMark, endMark)
	}
	out := s[:i] + beginMark + "\n" + exitstatus.Markdown() + s[j:]
	if out == s {
		return nil
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.WriteFile(path, []byte(out), fi.Mode().Perm())
}
