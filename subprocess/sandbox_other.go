//go:build !linux

package subprocess

import (
	"os/exec"
	"syscall"
)

// apply does nothing: no sandbox confines a program on this OS.
func (confined) apply(*exec.Cmd) {}

// cloneflags is 0: no namespaces here.
func cloneflags(*syscall.SysProcAttr) uintptr { return 0 }
