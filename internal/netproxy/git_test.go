package netproxy

import (
	"net/http/cgi"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitFetch: git clones and fetches a repository served over HTTPS (git's own
// http-backend) on an allowed name through the proxy, with HTTPS_PROXY set; a remote on a
// name not allowed fails as curl's does ("CONNECT tunnel failed, response 403": git uses
// libcurl), and Refused names it.
func TestGitFetch(t *testing.T) {
	git := needClient(t, "git")
	execPath, _, code := run(t, nil, git, "--exec-path")
	backend := filepath.Join(strings.TrimSpace(execPath), "git-http-backend")
	if _, err := os.Stat(backend); code != 0 || err != nil {
		t.Skipf("git has no git-http-backend (%v): this test needs it as the server", err)
	}
	root, home := t.TempDir(), t.TempDir()
	gitEnv := []string{"HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@t"}
	src := filepath.Join(root, "src")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", src},
		{"-C", src, "commit", "-q", "--allow-empty", "-m", "one"},
		{"clone", "-q", "--bare", src, filepath.Join(root, "repo.git")},
	} {
		if out, errOut, code := run(t, gitEnv, git, args...); code != 0 {
			t.Fatalf("git %v: %s%s", args, out, errOut)
		}
	}
	ca := newTestCA(t, "git.test")
	srv := ca.tlsServer(t, &cgi.Handler{
		Path: backend,
		Env:  []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"},
	})
	p, addr := newProxy(t, Config{
		Allow:    []string{"git.test"},
		Resolver: mapResolver(map[string][]string{"git.test": {"127.0.0.1"}}),
		Name:     "subkit sandbox",
	})
	proxy := "http://" + addr
	env := append(gitEnv, "HTTPS_PROXY="+proxy, "https_proxy="+proxy, "GIT_SSL_CAINFO="+ca.caFile, "GIT_TERMINAL_PROMPT=0")
	url := "https://git.test:" + portOf(t, srv.Listener.Addr().String()) + "/repo.git"
	dst := filepath.Join(root, "dst")
	if out, errOut, code := run(t, env, git, "clone", "-q", url, dst); code != 0 {
		t.Fatalf("git clone: exit %d: %s%s", code, out, errOut)
	}
	if out, errOut, code := run(t, gitEnv, git, "-C", src, "commit", "-q", "--allow-empty", "-m", "two"); code != 0 {
		t.Fatalf("commit: %s%s", out, errOut)
	}
	if out, errOut, code := run(t, gitEnv, git, "-C", src, "push", "-q", filepath.Join(root, "repo.git"), "main"); code != 0 {
		t.Fatalf("push: %s%s", out, errOut)
	}
	if out, errOut, code := run(t, env, git, "-C", dst, "fetch", "-q", "origin"); code != 0 {
		t.Fatalf("git fetch: exit %d: %s%s", code, out, errOut)
	}
	if out, _, _ := run(t, env, git, "-C", dst, "log", "-1", "--format=%s", "origin/main"); out != "two\n" {
		t.Errorf("fetched %q", out)
	}
	_, errOut, code := run(t, env, git, "ls-remote", "https://other.test/repo.git")
	if code == 0 || !strings.Contains(errOut, "CONNECT tunnel failed, response 403") {
		t.Errorf("ls-remote of a name not allowed: exit %d: %s", code, errOut)
	}
	if r := p.Refused(); len(r) != 1 || r[0].Host != "other.test" {
		t.Errorf("refused %s", refusedHosts(p))
	}
}
