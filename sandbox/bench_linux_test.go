package sandbox

import (
	"os"
	"os/exec"
	"testing"
)

// BenchmarkRun: /bin/true started and waited for, unconfined and under each variant (the
// helper is the test binary).
func BenchmarkRun(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	prog := Program{Path: "/bin/true", Args: []string{"true"}, Dir: dir, TempDir: dir, Home: dir}
	run := func(b *testing.B, l *Launch) {
		for b.Loop() {
			cmd := exec.Command(l.Path)
			cmd.Args, cmd.Env, cmd.Dir = l.Args, l.Env, dir
			if l.Report.Backend != "" {
				cmd.SysProcAttr = l.SysProcAttr()
			}
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("unconfined", func(b *testing.B) { run(b, &Launch{Path: prog.Path, Args: prog.Args}) })
	for _, opts := range []probeOptions{{}, {noSeccomp: true}} {
		sb, err := newSandbox(b.Context(), exe, opts)
		if err != nil {
			b.Fatal(err)
		}
		for _, be := range sb.Backends() {
			name := string(be)
			if opts.noSeccomp {
				name += "-noseccomp"
			}
			b.Run(name, func(b *testing.B) {
				l, err := sb.Prepare(&Policy{Backend: be}, prog)
				if err != nil {
					b.Fatal(err)
				}
				run(b, l)
			})
		}
	}
}

// BenchmarkNew: the probe.
func BenchmarkNew(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := newSandbox(b.Context(), exe, probeOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPrepare: resolving the default policy.
func BenchmarkPrepare(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	sb, err := newSandbox(b.Context(), exe, probeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	prog := Program{Path: "/bin/true", Args: []string{"true"}, Dir: dir, TempDir: dir, Home: dir}
	for b.Loop() {
		if _, err := sb.Prepare(&Policy{}, prog); err != nil {
			b.Fatal(err)
		}
	}
}
