//go:build !linux && !darwin && !windows

package procinspect_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/subkit/subkit/procinspect"
)

func leftoverProcesses() []string { return nil }

func TestUnsupported(t *testing.T) {
	ctx := context.Background()
	_, err := procinspect.Snapshot(ctx)
	assert.ErrorIs(t, err, procinspect.ErrUnsupported)
	_, err = procinspect.Lookup(ctx, 1)
	assert.ErrorIs(t, err, procinspect.ErrUnsupported)
	_, err = procinspect.Alive(ctx, procinspect.Identity{Pid: 1})
	assert.ErrorIs(t, err, procinspect.ErrUnsupported)
	_, err = procinspect.Environ(ctx, 1)
	assert.ErrorIs(t, err, procinspect.ErrUnsupported)
}
