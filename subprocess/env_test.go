//go:build unix

package subprocess_test

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/subkit/subkit/subprocess"
)

// TestEnvScrubNearMisses: names that hold passwords, sessions, cookies and DSNs under other
// spellings, the ssh agent's socket, and values carrying a URL with a password never reach a
// child; the shell's working directories, git's author identity and URLs without a password
// do, and the allow-list brings one back.
func TestEnvScrubNearMisses(t *testing.T) {
	scrubbed := []string{
		"DB_PASS=hunter2",
		"MYSQL_PWD=hunter2",
		"PGPASSFILE=/home/x/.pgpass",
		"ADMIN_PASSPHRASE=hunter2",
		"GITHUB_AUTH=hunter2",
		"HTTP_AUTHORIZATION=Bearer hunter2",
		"SSH_AUTH_SOCK=/tmp/ssh-x/agent.1",
		"SESSION_COOKIE=hunter2",
		"RAILS_SESSION=hunter2",
		"SENTRY_DSN=https://hunter2@o1.ingest.example/1",
		"DATABASE_URL=postgres://app:hunter2@db.example/app",
		"HTTPS_PROXY=http://u:hunter2@proxy.example:3128",
		"http_proxy=http://u:hunter2@proxy.example:3128",
		"CACHE=redis://:hunter2@cache.example:6379/0",
		"MIRRORS=https://a.example/simple https://u:hunter2@b.example/simple",
	}
	kept := []string{
		"PWD=/home/x/src", "OLDPWD=/home/x", "PATH=" + os.Getenv("PATH"), "HOME=/home/x", "LANG=C.UTF-8",
		"TERM=xterm-256color", "GIT_AUTHOR_NAME=Ann", "GIT_AUTHOR_EMAIL=ann@example.com",
		"REGISTRY=https://ann@registry.example/npm/",
		"INDEX=https://registry.example:8080/@scope/pkg",
		"DOCS=https://example.com/search?q=a:b@c",
		"NO_PROXY=localhost,127.0.0.1",
	}
	restored := "XDG_SESSION_TYPE=tty"
	host := append(append(append([]string(nil), scrubbed...), kept...), restored)
	svc := newService(t, subprocess.Config{Env: host, AllowEnv: []string{"XDG_SESSION_TYPE"}})
	res := run(t, svc, subprocess.Spec{Path: "env"})
	assert.Equal(t, 0, res.ExitCode)
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(res.Stdout.Tail)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		got[k] = v
	}
	assert.NotContains(t, string(res.Stdout.Tail), "hunter2")
	for _, kv := range scrubbed {
		name, _, _ := strings.Cut(kv, "=")
		assert.NotContains(t, got, name, "scrubbed")
	}
	for _, kv := range append(kept, restored) {
		name, value, _ := strings.Cut(kv, "=")
		assert.Equal(t, value, got[name], "%s is kept", name)
	}
	assert.NotContains(t, strings.Join(svc.Env(), "\n"), "hunter2", "the base environment every child starts from")
}
