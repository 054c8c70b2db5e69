package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPrepareInvalid: bad input gets a typed error naming the field, never a panic nor a
// silent default.
func TestPrepareInvalid(t *testing.T) {
	vs := variants(t)
	sb := vs[0].sb
	w := newWorld(t)
	good := w.sh("true")
	with := func(f func(p *Program)) Program {
		p := good
		p.Args = slices.Clone(good.Args)
		f(&p)
		return p
	}
	huge := strings.Repeat("x", 128<<10)
	cases := []struct {
		name  string
		pol   *Policy
		prog  Program
		kind  error
		field string
	}{
		{"nil policy", nil, good, ErrInvalid, "Policy"},
		{"relative path", &Policy{}, with(func(p *Program) { p.Path = "sh" }), ErrInvalid, "Program.Path"},
		{"missing program", &Policy{}, with(func(p *Program) { p.Path = "/nonexistent/sh" }), ErrNotFound, "Program.Path"},
		{"no args", &Policy{}, with(func(p *Program) { p.Args = nil }), ErrInvalid, "Program.Args"},
		{"NUL in an argument", &Policy{}, with(func(p *Program) { p.Args[1] = "a\x00b" }), ErrInvalid, "Program.Args[1]"},
		{"argument over MAX_ARG_STRLEN", &Policy{}, with(func(p *Program) { p.Args[2] = huge }), ErrInvalid, "Program.Args[2]"},
		{"env without =", &Policy{}, with(func(p *Program) { p.Env = []string{"NOEQUALS"} }), ErrInvalid, "Program.Env[0]"},
		{"relative dir", &Policy{}, with(func(p *Program) { p.Dir = "work" }), ErrInvalid, "Program.Dir"},
		{"missing dir", &Policy{}, with(func(p *Program) { p.Dir = "/nonexistent" }), ErrNotFound, "Program.Dir"},
		{"no temp dir with default roots", &Policy{}, with(func(p *Program) { p.TempDir = "" }), ErrInvalid, "Program.TempDir"},
		{"relative home", &Policy{}, with(func(p *Program) { p.Home = "home" }), ErrInvalid, "Program.Home"},
		{"no home for ~", &Policy{}, with(func(p *Program) { p.Home = "" }), ErrInvalid, "DefaultHidden()[0]"},
		{"~user", &Policy{Hidden: []string{"~root/.ssh"}, NoDefaultHidden: true}, good, ErrInvalid, "Policy.Hidden[0]"},
		{"empty hidden entry", &Policy{Hidden: []string{""}, NoDefaultHidden: true}, good, ErrInvalid, "Policy.Hidden[0]"},
		{"hidden /", &Policy{Hidden: []string{"/"}, NoDefaultHidden: true}, good, ErrInvalid, "Policy.Hidden[0]"},
		{"hidden and writable", &Policy{Hidden: []string{"."}, NoDefaultHidden: true}, good, ErrInvalid, "Policy.Hidden[0]"},
		{"missing writable root", &Policy{Writable: []string{"nonexistent"}}, good, ErrNotFound, "Policy.Writable[0]"},
		{"empty writable entry", &Policy{Writable: []string{""}}, good, ErrInvalid, "Policy.Writable[0]"},
		{"unknown network", &Policy{Network: 7}, good, ErrInvalid, "Policy.Network"},
		{"unknown backend", &Policy{Backend: "chroot"}, good, ErrInvalid, "Policy.Backend"},
		{"infinite limit", &Policy{Limits: Limits{CPUSeconds: ^uint64(0)}}, good, ErrInvalid, "Limits.CPUSeconds"},
		{"limit above the hard one", &Policy{Limits: Limits{OpenFiles: 1 << 40}}, good, ErrInvalid, "Limits.OpenFiles"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := sb.Prepare(c.pol, c.prog)
			require.Nil(t, l)
			require.ErrorIs(t, err, c.kind)
			var e *Error
			require.ErrorAs(t, err, &e)
			require.Equal(t, c.field, e.Name, "%v", err)
		})
	}
}

// TestPrepareLaunch: the program's arguments stay separate argv entries at the end of the
// Launch (a 100 KiB one included), the environment gets TMPDIR, the role and the plan, and a
// relative writable root is taken against the working directory.
func TestPrepareLaunch(t *testing.T) {
	for _, v := range variants(t) {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t)
			require.NoError(t, os.Mkdir(filepath.Join(w.work, "out"), 0o755))
			big := strings.Repeat("y", 100<<10)
			prog := w.program("/bin/sh", "-c", `printf '%s\n' "$#" "${#1}" "$2" "$TMPDIR"; echo x > out/f && echo out-writable; echo x > g || echo work-read-only; env | grep ^SUBKIT_ || echo no-helper-variables`, "sh", big, "two words")
			prog.Env = append(prog.Env, "TMPDIR=/elsewhere", RoleVar+"=forged")
			l := v.prepare(t, Policy{Writable: []string{"out"}}, prog)
			require.Equal(t, prog.Args, l.Args[len(l.Args)-len(prog.Args):])
			require.Equal(t, l.Path, l.Args[0])
			require.Equal(t, []string{filepath.Join(w.work, "out"), w.tmp}, l.Report.Writable)
			var roles []string
			for _, e := range l.Env {
				if strings.HasPrefix(e, RoleVar+"=") || strings.HasPrefix(e, "TMPDIR=") {
					roles = append(roles, e)
				}
			}
			require.Equal(t, []string{"TMPDIR=" + w.tmp, RoleVar + "=" + RoleSandbox}, roles)
			r := start(t, l, w.work, nil)
			require.Equal(t, 0, r.code, "%+v", r)
			require.Equal(t, "2\n102400\ntwo words\n"+w.tmp+"\nout-writable\nwork-read-only\nno-helper-variables\n", r.stdout)
		})
	}
}

// TestMainFails: the helper never starts the program unconfined: a plan it cannot read or
// apply ends it with 126, a program that does not exist with 127, each after one line.
func TestMainFails(t *testing.T) {
	vs := variants(t)
	w := newWorld(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	run := func(plan string) result {
		return start(t, &Launch{Path: exe, Args: []string{exe, "/bin/true"}, Env: []string{RoleVar + "=" + RoleSandbox, PlanVar + "=" + plan}}, w.work, nil)
	}
	for _, c := range []struct{ plan, msg string }{
		{"", "reading the plan"},
		{"{", "reading the plan"},
		{`{"v":99}`, "plan version 99"},
		{`{"v":1,"route":"chroot","path":"/bin/true","dir":"/"}`, `unknown route "chroot"`},
		{`{"v":1,"route":"landlock","abi":99,"path":"/bin/true","dir":"/"}`, "applying Landlock"},
	} {
		r := run(c.plan)
		require.Equal(t, 126, r.code, "%q: %+v", c.plan, r)
		require.Empty(t, r.stdout)
		require.True(t, strings.HasPrefix(r.stderr, "subkit sandbox: "), "%q", r.stderr)
		require.Contains(t, r.stderr, c.msg)
		require.Equal(t, 1, strings.Count(r.stderr, "\n"))
		require.Contains(t, LikelyDenial([]byte(r.stderr), r.code), "helper failed")
	}

	missing := filepath.Join(w.work, "gone")
	require.NoError(t, os.WriteFile(missing, nil, 0o755))
	l2 := vs[0].prepare(t, Policy{}, w.program(missing))
	require.NoError(t, os.Remove(missing))
	r := start(t, l2, w.work, nil)
	require.Equal(t, 127, r.code, "%+v", r)
	require.Contains(t, r.stderr, "subkit sandbox: exec "+missing)
}

// TestPrepareConcurrent: a Sandbox serves many goroutines at once (run with -race).
func TestPrepareConcurrent(t *testing.T) {
	vs := variants(t)
	w := newWorld(t)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Go(func() {
			v := vs[i%len(vs)]
			_, err := v.sb.Prepare(&Policy{Backend: v.backend, Hidden: []string{"~/.ssh"}}, w.sh("true"))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// TestReportString: the summary names the backend, the hidden paths and the network, and
// what is not enforced.
func TestReportString(t *testing.T) {
	r := Report{Backend: Landlock, Network: "off by seccomp", Hidden: []string{"/h"}, SamePid: true}
	require.Equal(t, "landlock: hidden paths enforced, network off by seccomp", r.String())
	r = Report{Backend: Bubblewrap, Network: "on", Unenforced: []string{"a", "b"}}
	require.Equal(t, "bwrap: no hidden path exists, network on, the program is a child of bwrap; not enforced: a; b", r.String())
	require.Equal(t, "off", NetworkOff.String())
	require.Equal(t, "Network(9)", Network(9).String())
	d := DefaultHidden()
	d[0] = "changed"
	require.Equal(t, "~/.ssh", DefaultHidden()[0], "a fresh slice each call")
	require.True(t, errors.Is(ErrUnsupported, errors.ErrUnsupported))
}
