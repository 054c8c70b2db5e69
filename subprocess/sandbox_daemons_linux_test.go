package subprocess_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/sandbox"
	"github.com/subkit/subkit/subprocess"
)

// Code in the sandbox that leaves daemons every way bash allows, then exits: once the result
// is in, Terminate leaves none of them running, under every backend that works here, with
// the guard and without. The daemons are found by an argument (a sandboxed environment is the
// policy's, not the test's mark).
func TestSandboxedDaemonsEnd(t *testing.T) {
	for _, backend := range []sandbox.Backend{sandbox.Namespaces, sandbox.Landlock, sandbox.Bubblewrap} {
		for _, guard := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/guard=%v", backend, guard), func(t *testing.T) {
				tag := fmt.Sprint(2_000_000 + rand.IntN(1_000_000))
				t.Cleanup(func() {
					for _, pid := range testutil.Tagged(tag) {
						syscall.Kill(pid, syscall.SIGKILL)
					}
				})
				svc := newService(t, subprocess.Config{Guard: guard})
				spec := sh(fmt.Sprintf(`setsid sleep %[1]s & (sleep %[1]s &) ; nohup sleep %[1]s >/dev/null 2>&1 & setsid bash -c 'sleep %[1]s &' & sleep 0.2; echo ready`, tag))
				spec.Sandbox = &sandbox.Policy{Backend: backend, Writable: []string{t.TempDir()}}
				spec.Grace = 500 * time.Millisecond
				h, err := svc.Spawn(context.Background(), spec)
				if errors.Is(err, subprocess.ErrUnsupported) {
					t.Skipf("%s does not work here: %v", backend, err)
				}
				require.NoError(t, err)
				defer h.Close()
				res, err := h.Wait(ctxT(t, time.Minute))
				require.NoError(t, err)
				require.Equal(t, "ready\n", string(res.Stdout.Tail), "%+v", res)
				require.NoError(t, h.Terminate(ctxT(t, time.Minute)))
				assert.Empty(t, testutil.Tagged(tag), "left running after Terminate")
			})
		}
	}
}
