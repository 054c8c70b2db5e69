//go:build linux

package bench

import (
	"testing"

	"go.uber.org/goleak"
)

// No goroutine may outlive the benchmarks: the Service's pumps, waiters and escalations all
// end with their trees.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
