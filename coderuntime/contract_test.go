package coderuntime_test

import (
	"testing"

	"github.com/subkit/subkit/coderuntime"
	"github.com/subkit/subkit/coderuntime/runtimetest"
)

func TestContract(t *testing.T) {
	runtimetest.Run(t, func(t *testing.T) coderuntime.Runtime {
		return newRuntime(t, coderuntime.Config{})
	})
}

func TestSessionContract(t *testing.T) {
	runtimetest.RunSessions(t, func(t *testing.T) coderuntime.SessionRuntime {
		return newRuntime(t, coderuntime.Config{})
	})
}
