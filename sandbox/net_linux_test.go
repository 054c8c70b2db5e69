package sandbox

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestNetwork: with the network off, connecting to a listener of the test on 127.0.0.1 fails
// and so does binding; with it on both work, as they do unconfined.
func TestNetwork(t *testing.T) {
	vs := variants(t)
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	go func() { // accept and drop, until the listener is closed
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	addr := l.Addr().String()

	t.Run("control", func(t *testing.T) {
		w := newWorld(t)
		for _, mode := range []string{"dial", "listen", "listen-mptcp"} {
			prog := w.self(t, mode, addr)
			r := start(t, &Launch{Path: prog.Path, Args: prog.Args, Env: prog.Env}, w.work, nil)
			require.Equal(t, 0, r.code, "%s: %+v", mode, r)
		}
	})

	for _, v := range vs {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t)
			for _, mode := range []string{"dial", "listen", "listen-mptcp"} {
				if mode == "listen-mptcp" && !v.seccomp() {
					// Landlock's TCP rules do not cover MPTCP: the bind works, in a network
					// namespace of the program's own that nothing outside reaches. The
					// Report says so.
					l := v.prepare(t, Policy{}, w.self(t, mode, addr))
					require.Contains(t, strings.Join(l.Report.Unenforced, "\n"), "MPTCP")
					continue
				}
				r, rep := v.run(t, Policy{}, w.self(t, mode, addr))
				require.Equal(t, 1, r.code, "%s must fail with the network off: %+v", mode, r)
				require.Contains(t, r.stderr, "test mode:")
				require.NotEmpty(t, LikelyDenial([]byte(r.stderr), r.status()), "%s: %q", mode, r.stderr)
				require.True(t, strings.HasPrefix(rep.Network, "off by "), rep.Network)
				if !v.seccomp() {
					require.Equal(t, "off by namespace", rep.Network)
				}

				r, rep = v.run(t, Policy{Network: NetworkOn}, w.self(t, mode, addr))
				require.Equal(t, 0, r.code, "%s must work with the network on: %+v", mode, r)
				require.Equal(t, "on", rep.Network)
			}
			if v.seccomp() {
				r, _ := v.run(t, Policy{}, w.self(t, "socket"))
				require.Equal(t, 1, r.code, "%+v", r)
				require.Contains(t, r.stderr, "operation not permitted")
			}
		})
	}
}

// TestBaseline: ptrace of the parent, mount, a new user namespace, a child started afresh
// that tries the network again, and reading the host's environment are refused, though each
// works unconfined.
func TestBaseline(t *testing.T) {
	vs := variants(t)
	pid := strconv.Itoa(os.Getpid())
	mnt := t.TempDir()
	checks := []struct {
		name    string
		prog    func(w world) Program
		control func(w world) Program // nil: prog
	}{
		{"ptrace", func(w world) Program { return w.self(t, "ptrace", pid) }, nil},
		{"mount", func(w world) Program { return w.self(t, "mount", mnt) },
			// Unconfined, in a mount namespace of its own, so that the test mounts nothing of
			// the host's.
			func(w world) Program {
				p := w.self(t, "mount", mnt)
				p.Args = append([]string{"/usr/bin/unshare", "--mount", "--propagation", "private", p.Path}, p.Args[1:]...)
				p.Path = "/usr/bin/unshare"
				return p
			}},
		{"unshare-user", func(w world) Program { return w.program("/usr/bin/unshare", "--user", "--map-root-user", "true") }, nil},
		{"child-socket", func(w world) Program { return w.self(t, "child-socket") }, nil},
		// The host's environment (where a harness keeps its keys) through /proc.
		{"host-environ", func(w world) Program { return w.program("/bin/cat", "/proc/"+pid+"/environ") }, nil},
	}

	t.Run("control", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("the unconfined ptrace and mount need root")
		}
		w := newWorld(t)
		for _, c := range checks {
			mk := c.control
			if mk == nil {
				mk = c.prog
			}
			prog := mk(w)
			r := start(t, &Launch{Path: prog.Path, Args: prog.Args, Env: prog.Env}, w.work, nil)
			require.Equal(t, 0, r.code, "%s unconfined: %+v", c.name, r)
		}
	})

	for _, v := range vs {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t)
			for _, c := range checks {
				if !v.seccomp() && (c.name == "unshare-user" || c.name == "child-socket") {
					continue // seccomp's part; the Report says so (below)
				}
				r, rep := v.run(t, Policy{}, c.prog(w))
				require.NotEqual(t, 0, r.code, "%s must be refused: %+v", c.name, r)
				if c.name == "host-environ" && !rep.SamePid {
					require.Contains(t, r.stderr, "No such file", "bwrap's pid namespace has no such process")
					continue
				}
				require.NotEmpty(t, LikelyDenial([]byte(r.stderr), r.status()), "%s: %q", c.name, r.stderr)
			}
			if v.seccomp() {
				// The seccomp filter and no_new_privs are inherited: a grandchild with a
				// cleared environment has them.
				r, _ := v.run(t, Policy{}, w.sh(`env -i /bin/grep -E '^(Seccomp|NoNewPrivs):' /proc/self/status`))
				require.Regexp(t, `Seccomp:\s+2`, r.stdout)
				require.Regexp(t, `NoNewPrivs:\s+1`, r.stdout)
			} else {
				l := v.prepare(t, Policy{}, w.sh("true"))
				require.Contains(t, strings.Join(l.Report.Unenforced, "\n"), "no seccomp filter")
			}
		})
	}
}
