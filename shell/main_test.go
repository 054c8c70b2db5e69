package shell

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/subprocess"
)

func TestMain(m *testing.M) {
	subprocess.HelperMain() // the test binary is the guard's helper
	goleak.VerifyTestMain(m)
}

// testConfig returns a Config whose processes carry a fresh test mark and whose Service keeps
// its runtime root in the test's temp dir, and registers the leak checks that run after every
// later cleanup: no marked process, no descriptor and nothing in the temp dir left.
func testConfig(t *testing.T) (Config, string) {
	t.Helper()
	mark := testutil.Mark()
	testutil.NoLeaks(t, mark)
	tmp := t.TempDir()
	testutil.EmptyDir(t, tmp)
	return Config{ServiceConfig: subprocess.Config{Env: testutil.Env(mark), TempDir: tmp}}, mark
}

// openT opens a session with cfg (from testConfig), closed at cleanup.
func openT(t *testing.T, cfg Config) *Session {
	t.Helper()
	s, err := Open(ctxT(t, time.Minute), cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// newSession is openT(testConfig(t)).
func newSession(t *testing.T) *Session {
	t.Helper()
	cfg, _ := testConfig(t)
	return openT(t, cfg)
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// run runs command to completion (a generous yield) and requires that it completed.
func run(t *testing.T, s *Session, command string) Step {
	t.Helper()
	st, err := s.Run(ctxT(t, time.Minute), command, time.Minute)
	require.NoError(t, err, "run %q", command)
	require.Equal(t, StateCompleted, st.State, "run %q: %+v", command, st)
	return st
}

// pollUntil polls s (short yields, no time limit but the test's context) until cond holds for
// the output gathered so far (starting with first's) and the latest Step; it returns both.
func pollUntil(t *testing.T, s *Session, first Step, cond func(out string, st Step) bool) (string, Step) {
	t.Helper()
	ctx := ctxT(t, time.Minute)
	var out strings.Builder
	out.WriteString(first.Output)
	if cond(out.String(), first) {
		return out.String(), first
	}
	for {
		st, err := s.Poll(ctx, 50*time.Millisecond)
		require.NoError(t, err)
		out.WriteString(st.Output)
		if cond(out.String(), st) {
			return out.String(), st
		}
		require.NotEqual(t, StateExited, st.State, "the shell exited; output so far: %q", out.String())
		if st.State == StateCompleted {
			time.Sleep(5 * time.Millisecond) // Poll returns at once: do not spin
		}
	}
}

func lookPath(t *testing.T, name string) {
	t.Helper()
	if _, err := os.Stat("/bin/" + name); err == nil {
		return
	}
	for _, dir := range strings.Split(os.Getenv("PATH"), ":") {
		if _, err := os.Stat(dir + "/" + name); err == nil {
			return
		}
	}
	t.Skipf("%s not found", name)
}
