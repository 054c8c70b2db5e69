//go:build !linux

package sandbox

import (
	"errors"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestUnsupported: off Linux everything fails with ErrUnsupported.
func TestUnsupported(t *testing.T) {
	if _, err := New("/bin/true"); !errors.Is(err, ErrUnsupported) || !errors.Is(err, errors.ErrUnsupported) {
		t.Fatalf("New: %v", err)
	}
	if _, err := (&Sandbox{}).Prepare(&Policy{}, Program{}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Prepare: %v", err)
	}
	if got := Main(); got != 126 {
		t.Fatalf("Main: %d", got)
	}
}
