package sandbox

import (
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// variant is one way of confining that the tests run: a backend forced on a Sandbox.
type variant struct {
	name    string
	sb      *Sandbox
	backend Backend
}

// sandboxes caches the probes of the test binary (each New runs a few processes).
var sandboxes struct {
	once       sync.Once
	def, noSec *Sandbox
	err        error
}

// variants returns every backend that works here, each forced in turn, plus Landlock as it
// runs where no seccomp filter can be loaded (the network cut by a namespace). It skips the
// test when nothing works here.
func variants(t *testing.T) []variant {
	t.Helper()
	sandboxes.once.Do(func() {
		exe, err := os.Executable()
		if err != nil {
			sandboxes.err = err
			return
		}
		if sandboxes.def, err = newSandbox(t.Context(), exe, probeOptions{}); err != nil {
			sandboxes.err = err
			return
		}
		sandboxes.noSec, sandboxes.err = newSandbox(t.Context(), exe, probeOptions{noSeccomp: true})
	})
	if sandboxes.def == nil {
		require.ErrorIs(t, sandboxes.err, ErrUnsupported)
		t.Skipf("no backend works here: %v", sandboxes.err)
	}
	require.NoError(t, sandboxes.err)
	var vs []variant
	for _, b := range sandboxes.def.Backends() {
		vs = append(vs, variant{name: string(b), sb: sandboxes.def, backend: b})
	}
	if sandboxes.noSec.Unavailable(Landlock) == nil {
		vs = append(vs, variant{name: "landlock-noseccomp", sb: sandboxes.noSec, backend: Landlock})
	}
	return vs
}

// seccomp reports whether the variant loads the seccomp filter.
func (v variant) seccomp() bool { return v.sb != sandboxes.noSec }

// prepare is Prepare with the variant's backend forced, checking the Report names it.
func (v variant) prepare(t *testing.T, p Policy, prog Program) *Launch {
	t.Helper()
	p.Backend = v.backend
	l, err := v.sb.Prepare(&p, prog)
	require.NoError(t, err)
	require.Equal(t, v.backend, l.Report.Backend)
	require.Contains(t, l.Report.String(), string(v.backend)+":")
	return l
}

// run prepares prog under p and runs it.
func (v variant) run(t *testing.T, p Policy, prog Program) (result, Report) {
	t.Helper()
	l := v.prepare(t, p, prog)
	return start(t, l, prog.Dir, nil), l.Report
}
