package modelenv_test

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/subkit/subkit/internal/modelenv"
	"github.com/subkit/subkit/subprocess"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func names(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		out = append(out, name)
	}
	return out
}

func TestPipesAndTerminal(t *testing.T) {
	for name, env := range map[string][]string{"pipes": modelenv.Pipes(), "terminal": modelenv.Terminal()} {
		for _, kv := range []string{"NO_COLOR=1", "PAGER=cat", "GIT_PAGER=cat", "GH_PAGER=cat", "GIT_TERMINAL_PROMPT=0", "PYTHONUNBUFFERED=1"} {
			assert.Contains(t, env, kv, name)
		}
		n := names(env)
		assert.Len(t, n, len(slices.Compact(slices.Sorted(slices.Values(n)))), "%s sets a name twice: %v", name, env)
	}
	assert.Contains(t, modelenv.Pipes(), "TERM=dumb")
	assert.Contains(t, modelenv.Pipes(), "GIT_EDITOR=true")
	assert.Contains(t, modelenv.Terminal(), "TERM=xterm-256color")
	assert.Contains(t, modelenv.Terminal(), "GIT_EDITOR="+modelenv.NoEditor)

	p := modelenv.Pipes()
	p[0] = "changed"
	assert.NotEqual(t, "changed", modelenv.Pipes()[0], "each call returns a new slice")
}

func TestStartup(t *testing.T) {
	env := []string{"A=1", "BASH_ENV=/x", "ENV=/y", "SHELLOPTS=xtrace", "BASHOPTS=extglob", "ENVX=2", "B"}
	assert.Equal(t, []string{"A=1", "ENVX=2", "B"}, modelenv.WithoutStartup(env))
	assert.NotNil(t, modelenv.WithoutStartup(nil))
	assert.Equal(t, []string{"BASH_ENV=", "ENV=", "SHELLOPTS=", "BASHOPTS="}, modelenv.EmptyStartup())
	assert.True(t, modelenv.IsStartupVar("BASH_ENV"))
	assert.False(t, modelenv.IsStartupVar("bash_env"))

	t.Setenv("BASH_ENV", "/etc/evil")
	sc := modelenv.ServiceConfig(subprocess.Config{TempDir: "/t"})
	assert.NotContains(t, names(sc.Env), "BASH_ENV", "the host environment without the startup variables")
	assert.Equal(t, "/t", sc.TempDir)
	assert.Equal(t, modelenv.WithoutStartup(os.Environ()), sc.Env)
}

func TestNewService(t *testing.T) {
	svc, err := modelenv.NewService(subprocess.Config{Env: []string{"PATH=/usr/bin:/bin", "BASH_ENV=/x"}, TempDir: t.TempDir()})
	require.NoError(t, err)
	assert.Contains(t, svc.Env(), "PATH=/usr/bin:/bin")
	assert.NotContains(t, names(svc.Env()), "BASH_ENV")
	require.NoError(t, svc.Close())
}
