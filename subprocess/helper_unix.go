//go:build unix

package subprocess

import (
	"fmt"
	"os"

	"github.com/subkit/subkit/internal/guard"
	"github.com/subkit/subkit/sandbox"
)

const helperRoleVar = guard.RoleVar

// runHelper runs a helper role and returns the process's exit status.
func runHelper(role string) int {
	switch role {
	case guard.RoleGuard:
		return guard.Serve(os.NewFile(3, "guard"))
	case sandbox.RoleSandbox:
		return sandbox.Main() // returns only when it could not exec the program
	}
	fmt.Fprintf(os.Stderr, "subkit helper: unknown role %q\n", role)
	return 2
}
