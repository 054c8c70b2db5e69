package procinspect_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/subkit/subkit/internal/proctest"
)

func TestMain(m *testing.M) {
	proctest.Main() // the test binary as a node of a test's process tree
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if left := leftoverProcesses(); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "procinspect tests left processes behind: %v\n", left)
			if code == 0 {
				code = 1
			}
		}
		os.Exit(code)
	}))
}
