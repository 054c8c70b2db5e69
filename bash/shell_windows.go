package bash

import (
	"os"
	"os/exec"
	"path/filepath"

	"golang.org/x/sys/windows/registry"
)

// gitBashFinder is where Git Bash is looked for: on Windows, as Git for Windows installs it.
func gitBashFinder() func() string { return gitBash }

// gitBash finds Git Bash on this machine (see gitBashIn), or returns "".
func gitBash() string {
	var install string
	for _, root := range []registry.Key{registry.LOCAL_MACHINE, registry.CURRENT_USER} {
		if k, err := registry.OpenKey(root, `SOFTWARE\GitForWindows`, registry.QUERY_VALUE); err == nil {
			install, _, _ = k.GetStringValue("InstallPath")
			k.Close()
			if install != "" {
				break
			}
		}
	}
	git, _ := exec.LookPath("git.exe")
	var user string
	if local := os.Getenv("LOCALAPPDATA"); local != "" {
		user = filepath.Join(local, "Programs")
	}
	return gitBashIn(install, git, []string{os.Getenv("ProgramW6432"), os.Getenv("ProgramFiles"), os.Getenv("ProgramFiles(x86)"), user}, isFile)
}

// isFile reports whether path names a regular file.
func isFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}
