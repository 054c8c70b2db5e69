package subprocess

import (
	"os/exec"
	"syscall"

	"github.com/subkit/subkit/sandbox"
)

// apply sets on cmd (prepared by the backend) what starting a confined program needs: a
// session of its own instead of a process group (the tree is still one group, led by the
// session leader), and the namespaces the sandbox asks for.
func (c confined) apply(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	if c.setsid {
		cmd.SysProcAttr.Setpgid, cmd.SysProcAttr.Setsid = false, true
	}
	sandbox.SetNamespaces(cmd.SysProcAttr, c.cloneflags)
}

// cloneflags are the namespaces a asks for (guard.Request.Clone).
func cloneflags(a *syscall.SysProcAttr) uintptr { return a.Cloneflags }
