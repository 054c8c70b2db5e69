package netproxy

import (
	"testing"

	"go.uber.org/goleak"
)

// No goroutine may outlive the tests: Close ends every connection and waits for them.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
