package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// The boundaries hold for an unprivileged host too: run as root (as CI runs), the attacks of
// adversary_linux_test.go and the file system tests run again as a uid of no user, through a
// copy of this test binary, where every backend is probed anew (the namespaces backend then
// builds its mounts with the capabilities of its own user namespace only).
func TestUnprivileged(t *testing.T) {
	if os.Getenv("SUBKIT_SANDBOX_UNPRIVILEGED") != "" {
		t.Skip("already the unprivileged run")
	}
	if os.Geteuid() != 0 {
		t.Skip("this process is unprivileged already: the other tests are the unprivileged run")
	}
	variants(t)
	uid := uint32(3_100_000 + os.Getpid()%100_000)
	bin, err := os.MkdirTemp("", "subkit-sandbox-unprivileged-")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, os.RemoveAll(bin)) })
	require.NoError(t, os.Chmod(bin, 0o755))
	exe := copyExecutable(t, filepath.Join(bin, "sandbox.test"))
	// A home outside the private /tmp, reachable by that uid (root's own is not).
	if !isRealDir("/home") {
		t.Skip("no /home to make the unprivileged user's home in")
	}
	home, err := os.MkdirTemp("/home", "subkit-test-")
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, os.RemoveAll(home)) })
	require.NoError(t, os.Chown(home, int(uid), int(uid)))

	cmd := exec.CommandContext(t.Context(), exe, "-test.count=1", "-test.v",
		"-test.run", "^(TestAdversary|TestHidden|TestWritableRoots|TestNetwork|TestBaseline|TestTerminal)")
	cmd.Dir = bin
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "SUBKIT_SANDBOX_UNPRIVILEGED=1"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uid, Gid: uid}}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, b := range sandboxes.def.Backends() {
		require.Contains(t, string(out), "--- PASS: TestAdversarySysctl/"+string(b), "%s", out)
	}
	require.NotContains(t, string(out), "--- FAIL")
	t.Logf("unprivileged run:\n%s", lastLines(string(out), 5))
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
