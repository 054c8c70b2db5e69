package bash

import (
	"path/filepath"
	"strings"

	"github.com/subkit/subkit/subprocess"
)

// chooseShell resolves Config.Shell (see its doc) to the command that runs bash; find is
// where Git Bash is looked for when the platform wants it (Windows), else nil.
func chooseShell(shell string, svc *subprocess.Service, find func() string) (subprocess.ShellCommand, error) {
	switch {
	case shell == KitShell:
	case shell != "":
		return subprocess.ShellCommand{Path: shell}, nil
	case find == nil:
		return subprocess.ShellCommand{Path: "bash"}, nil
	default:
		if p := find(); p != "" {
			return subprocess.ShellCommand{Path: p}, nil
		}
	}
	sh, err := svc.Shell()
	if err != nil {
		return sh, &ConfigError{Key: "shell", Field: "Shell", Err: err}
	}
	return sh, nil
}

// gitBashIn returns the bash.exe of a Git for Windows installation among the candidates, in
// order: the registry's InstallPath, the installation git.exe on PATH belongs to (its cmd, bin
// or mingw64\bin directory), then the usual install directories. exists says whether a file is
// there. It never returns System32's bash.exe (WSL's launcher), which is not Git Bash.
func gitBashIn(installPath, gitOnPath string, programDirs []string, exists func(string) bool) string {
	var roots []string
	if installPath != "" {
		roots = append(roots, installPath)
	}
	if gitOnPath != "" {
		dir := filepath.Dir(gitOnPath)
		switch strings.ToLower(filepath.Base(dir)) {
		case "cmd", "bin":
			roots = append(roots, filepath.Dir(dir))
			if strings.EqualFold(filepath.Base(filepath.Dir(dir)), "mingw64") {
				roots = append(roots, filepath.Dir(filepath.Dir(dir)))
			}
		}
	}
	for _, d := range programDirs {
		if d != "" {
			roots = append(roots, filepath.Join(d, "Git"))
		}
	}
	for _, r := range roots {
		if p := filepath.Join(r, "bin", "bash.exe"); exists(p) {
			return p
		}
	}
	return ""
}
