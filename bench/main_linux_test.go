//go:build linux

package bench

import (
	"os"
	"strconv"
	"testing"

	"go.uber.org/goleak"

	"github.com/subkit/subkit/subprocess"
)

// No goroutine may outlive the benchmarks: the Service's pumps, waiters and escalations all
// end with their trees.
func TestMain(m *testing.M) {
	subprocess.HelperMain() // the benchmark binary is the guard's helper
	if n := os.Getenv(liveTreesBaselineVar); n != "" {
		count, err := strconv.Atoi(n)
		if err != nil {
			os.Exit(2)
		}
		os.Exit(liveTreesBaseline(count))
	}
	goleak.VerifyTestMain(m)
}
