package bash

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Git Bash is found where Git for Windows puts it, in order, and System32's bash.exe (WSL's
// launcher) never is.
func TestGitBashIn(t *testing.T) {
	j := filepath.Join
	have := map[string]bool{}
	exists := func(p string) bool { return have[p] }
	pf, user := j("C:", "Program Files"), j("C:", "Users", "me", "AppData", "Local", "Programs")
	dirs := []string{pf, "", user}

	assert.Empty(t, gitBashIn("", "", dirs, exists), "nothing installed")
	have[j("C:", "Windows", "System32", "bash.exe")] = true
	assert.Empty(t, gitBashIn("", j("C:", "Windows", "System32", "git.exe"), dirs, exists), "WSL's bash is not Git Bash")

	have[j(user, "Git", "bin", "bash.exe")] = true
	assert.Equal(t, j(user, "Git", "bin", "bash.exe"), gitBashIn("", "", dirs, exists), "a per-user install")
	have[j(pf, "Git", "bin", "bash.exe")] = true
	assert.Equal(t, j(pf, "Git", "bin", "bash.exe"), gitBashIn("", "", dirs, exists), "Program Files first")

	have[j("D:", "Git", "bin", "bash.exe")] = true
	for _, git := range []string{j("D:", "Git", "cmd", "git.exe"), j("D:", "Git", "bin", "git.exe"), j("D:", "Git", "mingw64", "bin", "git.exe")} {
		assert.Equal(t, j("D:", "Git", "bin", "bash.exe"), gitBashIn("", git, dirs, exists), "the install of %s", git)
	}
	have[j("E:", "tools", "git", "bin", "bash.exe")] = true
	assert.Equal(t, j("E:", "tools", "git", "bin", "bash.exe"), gitBashIn(j("E:", "tools", "git"), j("D:", "Git", "cmd", "git.exe"), dirs, exists), "the registry's InstallPath first")
}
