package coderuntime_test

import (
	"testing"

	"github.com/subkit/subkit/coderuntime"
	"github.com/subkit/subkit/coderuntime/runtimetest"
)

func TestContract(t *testing.T) {
	if len(newRuntime(t, coderuntime.Config{}).Languages()) == 0 {
		t.Skip("none of python3, node and bash is installed here")
	}
	runtimetest.Run(t, func(t *testing.T) runtimetest.Runtime {
		return newRuntime(t, coderuntime.Config{})
	})
}

func TestSessionContract(t *testing.T) {
	if len(newRuntime(t, coderuntime.Config{}).SessionLanguages()) == 0 {
		t.Skip("no session language here: sessions need python3 or node, and Unix domain sockets (not Windows)")
	}
	runtimetest.RunSessions(t, func(t *testing.T) runtimetest.SessionRuntime {
		return newRuntime(t, coderuntime.Config{})
	})
}
