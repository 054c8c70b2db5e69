package sandbox

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fakeBwrap is a bwrap that fails as bwrap does under AppArmor's restriction of unprivileged
// user namespaces.
func fakeBwrap(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "bwrap")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"), 0o755))
	return p
}

func noLandlock() (int, error) { return 0, nil }

// TestProbeNext: with Landlock made unavailable the probe finds the next backend, and
// Prepare with no Backend uses it; asking for Landlock fails closed.
func TestProbeNext(t *testing.T) {
	variants(t)
	if sandboxes.def.Unavailable(Bubblewrap) != nil {
		t.Skipf("only one backend works here: %v", sandboxes.def.Unavailable(Bubblewrap))
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	sb, err := newSandbox(t.Context(), exe, probeOptions{landlockABI: noLandlock, noNamespaces: true})
	require.NoError(t, err)
	require.Equal(t, []Backend{Bubblewrap}, sb.Backends())
	require.ErrorIs(t, sb.Unavailable(Landlock), ErrUnsupported)
	require.Contains(t, sb.Unavailable(Landlock).Error(), "Landlock is not enabled")

	w := newWorld(t)
	l, err := sb.Prepare(&Policy{}, w.sh("echo ok > f"))
	require.NoError(t, err)
	require.Equal(t, Bubblewrap, l.Report.Backend)
	r := start(t, l, w.work, nil)
	require.Equal(t, 0, r.code, "%+v", r)

	_, err = sb.Prepare(&Policy{Backend: Landlock}, w.sh("true"))
	require.ErrorIs(t, err, ErrUnsupported)
	require.ErrorIs(t, err, errors.ErrUnsupported)
	require.Contains(t, err.Error(), "Landlock is not enabled")
}

// TestProbeBrokenBwrap: a bwrap that fails when it runs is found missing, with its message.
func TestProbeBrokenBwrap(t *testing.T) {
	variants(t)
	exe, err := os.Executable()
	require.NoError(t, err)
	sb, err := newSandbox(t.Context(), exe, probeOptions{bwrap: fakeBwrap(t)})
	require.NoError(t, err)
	require.NotContains(t, sb.Backends(), Bubblewrap)
	require.Contains(t, sb.Unavailable(Bubblewrap).Error(), "setting up uid map: Permission denied")
}

// TestProbeNone: with no backend working, New fails closed with ErrUnsupported saying why
// each one does not work.
func TestProbeNone(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	sb, err := newSandbox(t.Context(), exe, probeOptions{landlockABI: noLandlock, bwrap: fakeBwrap(t), noNamespaces: true})
	require.Nil(t, sb)
	require.ErrorIs(t, err, ErrUnsupported)
	require.ErrorIs(t, err, errors.ErrUnsupported)
	var e *Error
	require.ErrorAs(t, err, &e)
	require.Contains(t, err.Error(), "landlock: Landlock is not enabled")
	require.Contains(t, err.Error(), "bwrap: bwrap: setting up uid map: Permission denied")
	// A zero Sandbox prepares nothing.
	_, err = (&Sandbox{}).Prepare(&Policy{}, Program{})
	require.ErrorIs(t, err, ErrInvalid)
	var nilSB *Sandbox
	_, err = nilSB.Prepare(&Policy{}, Program{})
	require.ErrorIs(t, err, ErrInvalid)
	require.Empty(t, nilSB.Backends())
}

// TestProbeNotAHelper: a binary that does not act as the helper is caught by the probe.
func TestProbeNotAHelper(t *testing.T) {
	variants(t)
	sb, err := newSandbox(t.Context(), "/bin/true", probeOptions{})
	require.Nil(t, sb)
	require.ErrorIs(t, err, ErrUnsupported)
	require.Contains(t, err.Error(), "did not act as the sandbox helper")
}

// TestProbeNoSeccomp: where no seccomp filter loads, Landlock still works, with the network
// cut by a namespace, and the Report says what only seccomp refuses.
func TestProbeNoSeccomp(t *testing.T) {
	for _, v := range variants(t) {
		if v.seccomp() {
			continue
		}
		w := newWorld(t)
		l := v.prepare(t, Policy{}, w.sh("true"))
		require.Equal(t, "/usr/bin/unshare", l.Path, "%q", l.Args)
		require.Equal(t, []string{"--user", "--map-current-user", "--net", "--"}, l.Args[1:5])
		require.Equal(t, "off by namespace", l.Report.Network)
		require.True(t, l.Report.SamePid)
		require.Contains(t, l.Report.String(), "network off by namespace")
		require.Contains(t, strings.Join(l.Report.Unenforced, "\n"), "no seccomp filter")
		// With the network on, no namespace: the helper is started directly.
		l = v.prepare(t, Policy{Network: NetworkOn}, w.sh("true"))
		require.Equal(t, []string{l.Path}, l.Args[:1])
		require.NotContains(t, l.Path, "unshare")
	}
}

// TestNewInvalid: bad arguments of New.
func TestNewInvalid(t *testing.T) {
	plain := filepath.Join(t.TempDir(), "plain")
	require.NoError(t, os.WriteFile(plain, []byte("not a program"), 0o644))
	for _, tc := range []struct {
		helper string
		kind   error
	}{
		{"", ErrInvalid},
		{"relative/helper", ErrInvalid},
		{"/nonexistent/helper", ErrNotFound},
		{"/etc", ErrInvalid},
		{plain, ErrInvalid}, // not executable
	} {
		_, err := New(tc.helper)
		require.ErrorIs(t, err, tc.kind, tc.helper)
	}
	//nolint:staticcheck // a nil context on purpose
	_, err := NewContext(nil, "/bin/true")
	require.ErrorIs(t, err, ErrInvalid)
}

// TestProbeFinds: a backend the machine supports (Landlock in the kernel; a bwrap that runs
// a program in a new user namespace) is found working, so that a fault of this package that
// makes the probe drop it fails here rather than leave its tests unrun.
func TestProbeFinds(t *testing.T) {
	variants(t)
	abi, err := landlockABI()
	require.NoError(t, err)
	if abi >= 1 {
		require.NoError(t, sandboxes.def.Unavailable(Landlock))
	}
	if bwrap, err := exec.LookPath("bwrap"); err == nil {
		raw := exec.CommandContext(t.Context(), bwrap, "--unshare-user", "--unshare-pid", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "/bin/true")
		if out, err := raw.CombinedOutput(); err == nil {
			require.NoError(t, sandboxes.def.Unavailable(Bubblewrap))
		} else {
			t.Logf("bwrap does not run here (%v: %s): its backend is rightly missing", err, out)
		}
	}
}
