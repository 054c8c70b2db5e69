package linux

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if left := leftoverChildren(); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "procinspect/linux tests left child processes behind: %v\n", left)
			if code == 0 {
				code = 1
			}
		}
		os.Exit(code)
	}))
}
