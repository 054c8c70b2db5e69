package sandbox

import (
	"strings"
	"testing"
)

// TestDefaultHiddenList: every default hidden path is under the home directory ("~/" and
// something after it), none is listed twice, and the credential stores a program must never
// read by default are all there (the 25 of issue 24: its survey of common stores), as are the
// two of git-credential-store(1) and the dotfiles of pip, cargo, mysql and terraform.
func TestDefaultHiddenList(t *testing.T) {
	list := DefaultHidden()
	seen := make(map[string]bool, len(list))
	for _, p := range list {
		if !strings.HasPrefix(p, "~/") || len(p) == len("~/") || strings.HasSuffix(p, "/") {
			t.Errorf("%q: want ~/ and a name after it", p)
		}
		if seen[p] {
			t.Errorf("%q is listed twice", p)
		}
		seen[p] = true
	}
	stores := []string{
		"~/.ssh", "~/.gnupg", "~/.aws", "~/.config/gcloud", "~/.docker/config.json", "~/.netrc", "~/.kube",
		"~/.config/gh/hosts.yml", "~/.git-credentials", "~/.npmrc", "~/.pypirc", "~/.cargo/credentials.toml",
		"~/.azure", "~/.vault-token", "~/.pgpass", "~/.my.cnf", "~/.terraform.d/credentials.tfrc.json",
		"~/.mozilla", "~/.config/google-chrome", "~/.bash_history", "~/.zsh_history",
		"~/.claude/.credentials.json", "~/.codex/auth.json", "~/.gemini/oauth_creds.json", "~/.config/github-copilot",
	}
	if len(stores) != 25 {
		t.Fatalf("the survey has 25 stores, the test lists %d", len(stores))
	}
	more := []string{
		"~/.config/git/credentials", "~/.config/pip/pip.conf", "~/.pip/pip.conf", "~/.cargo/credentials",
		"~/.mylogin.cnf", "~/.terraformrc", "~/.config/chromium", "~/.config/BraveSoftware",
		"~/.local/share/fish/fish_history", "~/.python_history", "~/.node_repl_history", "~/.psql_history",
		"~/.mysql_history", "~/.sqlite_history", "~/.irb_history",
	}
	for _, p := range append(stores, more...) {
		if !seen[p] {
			t.Errorf("%s is not hidden by default", p)
		}
	}
}
