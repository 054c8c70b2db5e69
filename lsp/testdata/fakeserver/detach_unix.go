//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// detach makes cmd a daemon: a session (and process group) of its own.
func detach(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
