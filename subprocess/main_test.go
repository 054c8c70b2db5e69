package subprocess_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/subprocess"
)

func TestMain(m *testing.M) {
	if os.Getenv(hostModeVar) != "no-helper" {
		subprocess.HelperMain() // the test binary is the guard's helper
	}
	if os.Getenv(hostModeVar) != "" {
		hostMode(os.Getenv(hostModeVar))
		return
	}
	goleak.VerifyTestMain(m)
}

// newService returns a Service whose children carry a test marker, with its temp and spill
// dirs inside the test's temp dir, and registers the leak checks: closed at the end, no
// marked process, descriptor or runtime dir left.
func newService(t *testing.T, cfg subprocess.Config) *subprocess.Service {
	t.Helper()
	svc, _ := newServiceMark(t, cfg)
	return svc
}

// newServiceMark is newService that also returns the marker its children carry.
func newServiceMark(t *testing.T, cfg subprocess.Config) (*subprocess.Service, string) {
	t.Helper()
	mark := testutil.Mark()
	testutil.NoLeaks(t, mark)
	if cfg.Env == nil {
		cfg.Env = testutil.Env(mark)
	} else {
		cfg.Env = append(cfg.Env, testutil.MarkVar+"="+mark)
	}
	tmp := t.TempDir()
	if cfg.TempDir == "" {
		cfg.TempDir = tmp
		testutil.EmptyDir(t, tmp)
	}
	if cfg.SpillDir == "" {
		cfg.SpillDir = t.TempDir()
	}
	svc, err := subprocess.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, svc.Close()) })
	return svc, mark
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// run spawns spec and waits for its result.
func run(t *testing.T, svc *subprocess.Service, spec subprocess.Spec) subprocess.Result {
	t.Helper()
	h, err := svc.Spawn(context.Background(), spec)
	require.NoError(t, err)
	t.Cleanup(func() { h.Close() })
	res, err := h.Wait(ctxT(t, 30*time.Second))
	require.NoError(t, err)
	return res
}

func sh(script string) subprocess.Spec {
	return subprocess.Spec{Path: "bash", Args: []string{"-c", script}}
}

// hostModeVar makes the test binary act as a host that spawns a sleep, prints its pid and
// waits to be killed.
const hostModeVar = "SUBKIT_TEST_HOST_MODE"

func hostMode(mode string) {
	switch mode {
	case "zero-values":
		zeroValues()
		return
	case "guarded":
		guardedHost()
		return
	case "no-helper": // HelperMain was not called
		_, err := subprocess.New(subprocess.Config{Guard: true})
		fmt.Println(err)
		return
	}
	svc, err := subprocess.New(subprocess.Config{KillOnHostExit: mode == "kill-on-host-exit"})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	h, err := svc.Spawn(context.Background(), subprocess.Spec{Path: "sleep", Args: []string{"1000"}})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println(h.Pid())
	select {}
}

// tagVar passes guardedHost the argument by which the test finds its sleeps, even those that
// cleared their environment.
const tagVar = "SUBKIT_TEST_TAG"

// guardedHost is a host with a guarded Service: 10 plain trees and 10 that leave a setsid
// daemon, a double-forked one and one with a cleared environment behind a running leader. It
// prints "ready" once all of them run, then waits to be killed.
func guardedHost() {
	tag := os.Getenv(tagVar)
	svc, err := subprocess.New(subprocess.Config{Guard: true})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	for range 10 {
		if _, err := svc.Spawn(context.Background(), quiet(subprocess.Spec{Path: "sleep", Args: []string{tag}})); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
	}
	script := fmt.Sprintf(`setsid sleep %[1]s & (sleep %[1]s &) ; env -i /bin/sleep %[1]s & exec sleep %[1]s`, tag)
	for range 10 {
		if _, err := svc.Spawn(context.Background(), quiet(sh(script))); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
	}
	// Trees that leave only a process with nothing to attribute it by (a session of its own, a
	// cleared environment): the guard adopts it as the leader exits, and tells the host so
	// before it tells of the exit, which Wait has seen.
	for range 5 {
		h, err := svc.Spawn(context.Background(), quiet(sh(fmt.Sprintf(`setsid env -i /bin/sleep %s & exit 0`, tag))))
		if err == nil {
			_, err = h.Wait(context.Background())
		}
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
	}
	fmt.Println("ready")
	select {}
}

// quiet is spec with both streams discarded, so no pipe holds the result.
func quiet(spec subprocess.Spec) subprocess.Spec {
	spec.Stdout.Disposition = subprocess.Discard
	spec.Stderr.Disposition = subprocess.Discard
	return spec
}
