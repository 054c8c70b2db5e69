//go:build !unix

package subprocess

import (
	"fmt"
	"os"
)

const helperRoleVar = "SUBKIT_HELPER"

// runHelper: no helper role exists on this OS.
func runHelper(role string) int {
	fmt.Fprintf(os.Stderr, "subkit helper: role %q is not supported on this OS\n", role)
	return 2
}
