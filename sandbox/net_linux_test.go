package sandbox

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
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

// TestNetworkAllowList: with NetworkAllowList the program reaches the proxy the caller serves
// on a Unix socket (here a stand-in that answers every request with what it was asked) through
// 127.0.0.1:ProxyPort, found by curl and Python through the proxy variables, while a direct
// connection to a listener of the host fails at once; the other backends refuse the policy.
func TestNetworkAllowList(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl here (make deps installs it)")
	}
	host, err := net.Listen("tcp4", "127.0.0.1:0") // the host's own service: never reached
	require.NoError(t, err)
	t.Cleanup(func() { host.Close() })
	go func() {
		for {
			c, err := host.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("HTTP/1.0 200 OK\r\n\r\nHOST-SERVICE\n"))
			c.Close()
		}
	}()
	sockDir := testutil.DirOutsideTmp(t, "proxy-")
	sock := filepath.Join(sockDir, "proxy.sock")
	pl, err := net.Listen("unix", sock)
	require.NoError(t, err)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "proxied %s %s\n", r.Method, r.RequestURI)
	})}
	go srv.Serve(pl)
	t.Cleanup(func() { srv.Close() })

	pol := Policy{Network: NetworkAllowList, Allow: []string{"example.test"}}
	for _, v := range variants(t) {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t)
			prog := w.sh(`curl -sS --max-time 20 http://example.test/a; python3 -c 'import urllib.request; print(urllib.request.urlopen("http://example.test/b", timeout=20).read().decode(), end="")'
env | grep -i '^https\?_proxy=' | sort | tr '\n' ' '; echo
curl -sS --noproxy '*' --max-time 20 http://` + host.Addr().String() + `/ 2>&1; echo "direct=$?"; echo done`)
			prog.Proxy = sock
			pol := pol
			pol.Backend = v.backend
			l, err := v.sb.Prepare(&pol, prog)
			if v.backend != Namespaces {
				require.ErrorIs(t, err, ErrUnsupported)
				require.ErrorContains(t, err, "needs the namespaces backend")
				return
			}
			require.NoError(t, err)
			require.Equal(t, "allow-list through the proxy", l.Report.Network)
			require.Equal(t, []string{"example.test"}, l.Report.Allow)
			require.Contains(t, l.Report.Namespaces, "net")
			r := start(t, l, prog.Dir, nil)
			require.Equal(t, 0, r.code, "%+v", r)
			require.Contains(t, r.stdout, "proxied GET http://example.test/a\nproxied GET http://example.test/b\n", "%+v", r)
			for _, v := range []string{"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"} {
				require.Contains(t, r.stdout, v+"=http://127.0.0.1:3128 ", "%+v", r)
			}
			require.NotContains(t, r.stdout, "HOST-SERVICE", "%+v", r)
			require.Contains(t, r.stdout, "Failed to connect", "%+v", r)
			require.Contains(t, r.stdout, "direct=7\ndone", "%+v", r)
		})
	}
}

// Prepare checks an allow-list policy: hosts to allow, the proxy's socket, and Allow only with
// NetworkAllowList.
func TestNetworkAllowListInvalid(t *testing.T) {
	v := variants(t)[0]
	w := newWorld(t)
	sock := filepath.Join(testutil.DirOutsideTmp(t, "proxy-"), "proxy.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer l.Close()
	withProxy := w.sh("true")
	withProxy.Proxy = sock
	for _, c := range []struct {
		pol  Policy
		prog Program
		want string
	}{
		{Policy{Network: NetworkAllowList}, withProxy, "empty: NetworkAllowList needs at least one host pattern"},
		{Policy{Network: NetworkAllowList, Allow: []string{"a b"}}, withProxy, "want a host pattern"},
		{Policy{Network: NetworkAllowList, Allow: []string{"x.test"}}, w.sh("true"), "needs the Unix socket of the allow-list proxy"},
		{Policy{Network: NetworkAllowList, Allow: []string{"x.test"}}, func() Program { p := withProxy; p.Proxy = w.work; return p }(), "is not a Unix socket"},
		{Policy{Allow: []string{"x.test"}}, withProxy, "apply with Network NetworkAllowList only"},
	} {
		_, err := v.sb.Prepare(&c.pol, c.prog)
		require.ErrorIs(t, err, ErrInvalid, "%+v", c.pol)
		require.ErrorContains(t, err, c.want)
	}
}
