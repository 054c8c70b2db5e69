package subprocess

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/procinspect"
)

// A terminal's Terminate that leaves survivors reports them in the common error shape: an
// *Error of kind ErrSystem whose Survivors name them, joined with what else failed.
func TestSurvivorsError(t *testing.T) {
	left := []procinspect.Identity{{Pid: 41, Start: 7}, {Pid: 42, Start: 8}}
	cause := errors.New("snapshot failed")
	var err error = survivorsError("bash", left, cause)
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, left, e.Survivors)
	assert.ErrorIs(t, err, ErrSystem)
	assert.ErrorIs(t, err, cause)
	assert.Contains(t, err.Error(), "2 processes survived SIGKILL")
	assert.Contains(t, err.Error(), left[0].String())
	assert.Equal(t, "terminate", e.Op)
}
