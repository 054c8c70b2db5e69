package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
)

// subkit bash killed with SIGKILL, or sent SIGHUP as when its terminal closes, leaves nothing
// of its tree running (the setsid daemon and the child with a cleared environment included)
// and no runtime root behind.
func TestKilledCLILeavesNothing(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGKILL, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			tag := strconv.Itoa(500000 + rand.IntN(400000))
			t.Cleanup(func() {
				for _, pid := range testutil.Tagged(tag) {
					syscall.Kill(pid, syscall.SIGKILL)
				}
			})
			tmp := t.TempDir()
			script := fmt.Sprintf(`setsid sleep %[1]s & env -i /bin/sleep %[1]s & sleep %[1]s`, tag)
			cmd := exec.Command(os.Args[0], "bash", "--timeout", "60s", script)
			cmd.Env = append(os.Environ(), asCLIVar+"=1", "TMPDIR="+tmp)
			require.NoError(t, cmd.Start())
			t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
			require.Eventually(t, func() bool { return len(testutil.Tagged(tag)) == 3 }, time.Minute, 5*time.Millisecond,
				"the command's three sleeps did not start")
			require.NoError(t, cmd.Process.Signal(sig))
			cmd.Wait()
			require.Eventually(t, func() bool { return len(testutil.Tagged(tag)) == 0 }, time.Minute, 10*time.Millisecond,
				"survivors: %v", testutil.Tagged(tag))
			require.Eventually(t, func() bool {
				roots, _ := filepath.Glob(filepath.Join(tmp, "subkit-runtime-*"))
				return len(roots) == 0
			}, 5*time.Second, 10*time.Millisecond, "the runtime root is left behind")
		})
	}
}
