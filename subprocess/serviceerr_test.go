package subprocess_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/subprocess"
)

// Err says whether a Service is open, closed, or not one New made.
func TestServiceErr(t *testing.T) {
	assert.ErrorIs(t, (*subprocess.Service)(nil).Err(), subprocess.ErrInvalid)
	assert.ErrorIs(t, (&subprocess.Service{}).Err(), subprocess.ErrInvalid)
	svc, err := subprocess.New(subprocess.Config{TempDir: t.TempDir()})
	require.NoError(t, err)
	assert.NoError(t, svc.Err())
	require.NoError(t, svc.Close())
	err = svc.Err()
	require.ErrorIs(t, err, subprocess.ErrClosed)
	assert.Contains(t, err.Error(), "make a new one")
}
