//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"os"
	"runtime"
)

var errNotLinux = fmt.Errorf("no sandbox backend on %s (Landlock, seccomp and bubblewrap are Linux's)", runtime.GOOS)

// New fails on this OS with ErrUnsupported: every backend is Linux's.
func New(helper string) (*Sandbox, error) {
	return nil, &Error{Op: "new", Kind: ErrUnsupported, Err: errNotLinux}
}

// NewContext fails on this OS with ErrUnsupported (or ErrInvalid for a nil ctx).
func NewContext(ctx context.Context, helper string) (*Sandbox, error) {
	if ctx == nil {
		return nil, invalid("new", "ctx", "nil context")
	}
	return New(helper)
}

// Prepare fails on this OS with ErrUnsupported: no Sandbox can be made here.
func (s *Sandbox) Prepare(p *Policy, prog Program) (*Launch, error) {
	return nil, &Error{Op: "prepare", Kind: ErrUnsupported, Err: errNotLinux}
}

// Main fails on this OS: it says so on stderr and returns 126.
func Main() int {
	fmt.Fprintf(os.Stderr, "subkit sandbox: %v\n", errNotLinux)
	return 126
}
