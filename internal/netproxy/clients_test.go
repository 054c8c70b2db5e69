package netproxy

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// clientWorld is a proxy and the servers behind it, for the tests of real clients: pkg.test
// (plain HTTP) and tls.test (HTTPS, with a certificate of the test's CA) on loopback, both
// allowed exactly; *.corp.test allowed but bad.corp.test denied.
type clientWorld struct {
	p         *Proxy
	addr      string // the proxy's host:port
	plainPort string
	tlsPort   string
	caFile    string
}

func newClientWorld(t *testing.T) *clientWorld {
	ca := newTestCA(t, "tls.test")
	plain := httpServer(t, hello())
	secure := ca.tlsServer(t, hello())
	p, addr := newProxy(t, Config{
		Allow: []string{"pkg.test", "tls.test", "*.corp.test"},
		Deny:  []string{"bad.corp.test"},
		Resolver: mapResolver(map[string][]string{
			"pkg.test": {"127.0.0.1"}, "tls.test": {"127.0.0.1"}, "bad.corp.test": {"127.0.0.1"},
			"meta.corp.test": {"169.254.169.254"},
		}),
		Name: "subkit sandbox",
	})
	return &clientWorld{
		p: p, addr: addr, caFile: ca.caFile,
		plainPort: portOf(t, plain.Listener.Addr().String()),
		tlsPort:   portOf(t, secure.Listener.Addr().String()),
	}
}

// run runs a client with only PATH (and extra) in its environment, so no proxy setting of
// the machine's applies, and returns its stdout, stderr and exit status.
func run(t *testing.T, extra []string, name string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, extra...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("%s: %v", name, err)
	}
	return out.String(), errb.String(), code
}

func needClient(t *testing.T, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed: this test needs it as the client", name)
	}
	return path
}

// TestCurl: curl through the proxy, over HTTP (-x) and SOCKS5 (--socks5-hostname, and
// --socks5, which resolves the name itself and sends the address). What the user of curl sees:
// a forwarded request's 403 body is printed; a refused CONNECT is "CONNECT tunnel failed,
// response 403" (curl shows the reason line only with -v); a refused SOCKS5 connection is
// reply 2.
func TestCurl(t *testing.T) {
	curl := needClient(t, "curl")
	w := newClientWorld(t)
	proxy := "http://" + w.addr
	curlArgs := func(args ...string) []string { return append([]string{"-q", "-sS"}, args...) }
	reason := func(s string) string { return "subkit sandbox: " + s }

	out, errOut, code := run(t, nil, curl, curlArgs("-x", proxy, "http://pkg.test:"+w.plainPort+"/")...)
	if code != 0 || out != "hello from pkg.test:"+w.plainPort+"\n" {
		t.Errorf("http allowed: %d %q %q", code, out, errOut)
	}
	out, errOut, code = run(t, nil, curl, curlArgs("-x", proxy, "--cacert", w.caFile, "https://tls.test:"+w.tlsPort+"/")...)
	if code != 0 || out != "hello from tls.test:"+w.tlsPort+"\n" {
		t.Errorf("https allowed: %d %q %q", code, out, errOut)
	}
	out, errOut, code = run(t, nil, curl, curlArgs("--socks5-hostname", w.addr, "http://pkg.test:"+w.plainPort+"/")...)
	if code != 0 || out != "hello from pkg.test:"+w.plainPort+"\n" {
		t.Errorf("socks5 allowed: %d %q %q", code, out, errOut)
	}

	// Plain HTTP refusals: the body is what curl prints.
	for _, tc := range []struct{ url, reason string }{
		{"http://other.test/", "other.test:80 is not in the network allow-list (add --allow other.test)"},
		{"http://bad.corp.test:" + w.plainPort + "/", "bad.corp.test:" + w.plainPort + " is denied by the network deny-list pattern bad.corp.test"},
		{"http://127.0.0.1:" + w.plainPort + "/", "127.0.0.1:" + w.plainPort + " is an IP address, which only an IP or CIDR pattern allows (add --allow 127.0.0.1)"},
		{"http://169.254.169.254/latest/meta-data/", "169.254.169.254:80 is an IP address, which only an IP or CIDR pattern allows (add --allow 169.254.169.254)"},
		{"http://meta.corp.test/latest/meta-data/", "meta.corp.test:80 resolves to 169.254.169.254, a link-local address, which only a pattern naming the host exactly allows (add --allow meta.corp.test)"},
	} {
		out, errOut, code := run(t, nil, curl, curlArgs("-x", proxy, tc.url)...)
		if code != 0 || out != reason(tc.reason)+"\n" {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want %q", tc.url, code, out, errOut, reason(tc.reason))
		}
	}
	// CONNECT refusals: exit 56 and the status; with -v the reason line.
	for _, tc := range []struct{ url, reason string }{
		{"https://other.test/", "other.test:443 is not in the network allow-list (add --allow other.test)"},
		{"https://bad.corp.test/", "bad.corp.test:443 is denied by the network deny-list pattern bad.corp.test"},
		{"https://127.0.0.1:" + w.tlsPort + "/", "127.0.0.1:" + w.tlsPort + " is an IP address, which only an IP or CIDR pattern allows (add --allow 127.0.0.1)"},
	} {
		out, errOut, code := run(t, nil, curl, curlArgs("-x", proxy, tc.url)...)
		if code != 56 || out != "" || !strings.Contains(errOut, "CONNECT tunnel failed, response 403") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q", tc.url, code, out, errOut)
		}
		_, errOut, _ = run(t, nil, curl, curlArgs("-v", "-x", proxy, tc.url)...)
		if !strings.Contains(errOut, "< HTTP/1.1 403 "+reason(tc.reason)+"\r\n") {
			t.Errorf("%s -v: stderr %q lacks the reason %q", tc.url, errOut, reason(tc.reason))
		}
	}
	// SOCKS5 refusals: reply 2.
	for _, args := range [][]string{
		{"--socks5-hostname", w.addr, "http://other.test/"},
		{"--socks5-hostname", w.addr, "http://bad.corp.test:" + w.plainPort + "/"},
		{"--socks5", w.addr, "http://127.0.0.1:" + w.plainPort + "/"},
		{"--socks5", w.addr, "http://169.254.169.254/"},
	} {
		out, errOut, code := run(t, nil, curl, curlArgs(args...)...)
		if code != 97 || out != "" || !strings.Contains(errOut, "Can't complete SOCKS5 connection to") || !strings.HasSuffix(errOut, "(2)\n") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}

	var hosts []string
	for _, r := range w.p.Refused() {
		hosts = append(hosts, r.Host+":"+strconv.Itoa(r.Port)+"x"+strconv.Itoa(r.Count))
	}
	// other.test:80 is asked by -x and by SOCKS5; each CONNECT refusal is run twice (with -v).
	want := []string{
		"other.test:80x2", "bad.corp.test:" + w.plainPort + "x2", "127.0.0.1:" + w.plainPort + "x2", "169.254.169.254:80x2",
		"meta.corp.test:80x1", "other.test:443x2", "bad.corp.test:443x2", "127.0.0.1:" + w.tlsPort + "x2",
	}
	if strings.Join(hosts, " ") != strings.Join(want, " ") {
		t.Errorf("Refused:\n got %v\nwant %v", hosts, want)
	}
}

// pythonClient fetches each URL given with urllib, which takes its proxies from
// HTTP_PROXY/HTTPS_PROXY, and prints one line per URL: the body, or the error as urllib
// reports it (what the user of a Python program sees).
const pythonClient = `
import os, ssl, sys, urllib.request
ctx = ssl.create_default_context(cafile=os.environ["CA_FILE"])
for url in sys.argv[1:]:
    try:
        with urllib.request.urlopen(url, context=ctx, timeout=60) as r:
            print("OK", r.status, r.read().decode().strip())
    except Exception as e:
        print(type(e).__name__, e)
`

// TestPythonURLLib: Python's urllib with the proxy variables set, over HTTP and HTTPS;
// refusals show the reason in the exception's message, both for a forwarded request and for
// a CONNECT tunnel.
func TestPythonURLLib(t *testing.T) {
	python := needClient(t, "python3")
	w := newClientWorld(t)
	proxy := "http://" + w.addr
	env := []string{"HTTP_PROXY=" + proxy, "HTTPS_PROXY=" + proxy, "http_proxy=" + proxy, "https_proxy=" + proxy, "CA_FILE=" + w.caFile}
	urls := []string{
		"http://pkg.test:" + w.plainPort + "/",
		"https://tls.test:" + w.tlsPort + "/",
		"http://other.test/",
		"https://other.test/",
		"https://bad.corp.test/",
		"http://127.0.0.1:" + w.plainPort + "/",
		"https://169.254.169.254/",
		"http://meta.corp.test/",
	}
	out, errOut, code := run(t, env, python, append([]string{"-c", pythonClient}, urls...)...)
	if code != 0 {
		t.Fatalf("python3: exit %d: %s", code, errOut)
	}
	want := []string{
		"OK 200 hello from pkg.test:" + w.plainPort,
		"OK 200 hello from tls.test:" + w.tlsPort,
		"HTTPError HTTP Error 403: subkit sandbox: other.test:80 is not in the network allow-list (add --allow other.test)",
		"URLError <urlopen error Tunnel connection failed: 403 subkit sandbox: other.test:443 is not in the network allow-list (add --allow other.test)>",
		"URLError <urlopen error Tunnel connection failed: 403 subkit sandbox: bad.corp.test:443 is denied by the network deny-list pattern bad.corp.test>",
		"HTTPError HTTP Error 403: subkit sandbox: 127.0.0.1:" + w.plainPort + " is an IP address, which only an IP or CIDR pattern allows (add --allow 127.0.0.1)",
		"URLError <urlopen error Tunnel connection failed: 403 subkit sandbox: 169.254.169.254:443 is an IP address, which only an IP or CIDR pattern allows (add --allow 169.254.169.254)>",
		"HTTPError HTTP Error 403: subkit sandbox: meta.corp.test:80 resolves to 169.254.169.254, a link-local address, which only a pattern naming the host exactly allows (add --allow meta.corp.test)",
	}
	got := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(got) != len(want) {
		t.Fatalf("python3 printed:\n%s", out)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s:\n got %s\nwant %s", urls[i], got[i], want[i])
		}
	}
	// The tunnels count their bytes as they end, a moment after python has closed them.
	waitFor(t, "every record ended", func() bool {
		recs, _ := w.p.Records()
		for _, r := range recs {
			if r.End.IsZero() {
				return false
			}
		}
		return len(recs) == len(urls)
	})
	recs, _ := w.p.Records()
	if len(recs) != len(urls) || recs[0].Via != "http" || recs[1].Via != "connect" || recs[1].BytesDown == 0 {
		t.Errorf("records: %+v", recs)
	}
	if n := len(w.p.Refused()); n != len(urls)-2 {
		t.Errorf("Refused: %s", refusedHosts(w.p))
	}
}
