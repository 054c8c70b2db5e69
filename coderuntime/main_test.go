package coderuntime_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/subkit/subkit/coderuntime"
	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/subprocess"
)

func TestMain(m *testing.M) {
	subprocess.HelperMain() // the test binary is the sandbox's helper
	goleak.VerifyTestMain(m)
}

// realPython is the python3 interpreter behind any version-manager shim on PATH (pyenv's
// shim is a bash script that takes seconds per start), so timing-sensitive tests measure the
// runtime, not the shim. It is "" when python3 is not installed.
var realPython = sync.OnceValue(func() string {
	p, err := exec.LookPath("python3")
	if err != nil {
		return ""
	}
	if !strings.Contains(p, string(filepath.Separator)+"shims"+string(filepath.Separator)) {
		return p
	}
	out, err := exec.Command(p, "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		return p
	}
	return strings.TrimSpace(string(out))
})

// newRuntime returns a runtime whose runtime root and spill dir live in the test's temp
// dirs, closed at the end of the test; after that the temp dir must be empty (the runtime
// root is removed by Close).
func newRuntime(t *testing.T, cfg coderuntime.Config) *coderuntime.Runtime {
	t.Helper()
	tmp := t.TempDir()
	testutil.EmptyDir(t, tmp)
	if cfg.ServiceConfig.TempDir == "" {
		cfg.ServiceConfig.TempDir = tmp
	}
	if cfg.ServiceConfig.SpillDir == "" {
		cfg.ServiceConfig.SpillDir = t.TempDir()
	}
	if cfg.Interpreters == nil && realPython() != "" {
		cfg.Interpreters = map[coderuntime.Language]string{coderuntime.Python3: realPython()}
	}
	rt, err := coderuntime.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close()) })
	return rt
}

// marked returns a fresh mark and registers the leak check for it; runs must carry
// markEnv(mark) in their Env.
func marked(t *testing.T) string {
	t.Helper()
	mark := testutil.Mark()
	testutil.NoLeaks(t, mark)
	return mark
}

func markEnv(mark string) []string { return []string{testutil.MarkVar + "=" + mark} }

func ctxT(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// needs skips the test when the runtime cannot run lang here.
func needs(t *testing.T, rt *coderuntime.Runtime, lang coderuntime.Language) {
	t.Helper()
	for _, l := range rt.Languages() {
		if l == lang {
			return
		}
	}
	t.Skipf("%s is not available on this host", lang)
}
