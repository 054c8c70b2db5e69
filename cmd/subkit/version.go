package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/subkit/subkit/subprocess"
)

const versionUsage = `usage: subkit --version | subkit version [--json]

Prints subkit's module version (and the commit it was built from, when known), the Go version
and platform, and with --json the support-matrix row of this OS:
  {"version","commit","go","os","arch","platform","support":[{"capability","level"}]}

`

type versionOutput struct {
	Version  string               `json:"version"`
	Commit   string               `json:"commit,omitempty"`
	Go       string               `json:"go"`
	OS       string               `json:"os"`
	Arch     string               `json:"arch"`
	Platform string               `json:"platform"`
	Support  []subprocess.Support `json:"support"`
}

func cmdVersion(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("version", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print one JSON object")
	fail := func(err error) int { return reportError(stdout, stderr, *asJSON, "version", "invalid", exitUsage, err) }
	if help, err := parseFlags(fs, args, versionUsage, stdout); help {
		return 0
	} else if err != nil {
		return fail(err)
	}
	if fs.NArg() > 0 {
		return fail(fmt.Errorf("version takes no arguments, got %q", fs.Args()))
	}
	out := versionOutput{Version: "(unknown)", Go: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
		out.Version = bi.Main.Version // "(devel)" for a build inside the repository
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" {
				out.Commit = s.Value
			}
		}
	}
	out.Platform, out.Support = subprocess.Platform()
	if *asJSON {
		writeJSON(stdout, out)
		return 0
	}
	fmt.Fprintf(stdout, "subkit %s", out.Version)
	if out.Commit != "" {
		fmt.Fprintf(stdout, " (%.12s)", out.Commit)
	}
	fmt.Fprintf(stdout, " %s %s/%s\n", out.Go, out.OS, out.Arch)
	return 0
}
