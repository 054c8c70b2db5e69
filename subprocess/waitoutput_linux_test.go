package subprocess_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/subprocess"
)

// WaitOutput in lockstep with a writer: the child writes one byte and waits for the reader's
// answer before the next, so a single missed wake-up would hang the test (and fail it by the
// deadline) instead of being rescued by a later write.
func TestWaitOutputMissesNothing(t *testing.T) {
	const n = 10000
	svc := newService(t, subprocess.Config{})
	spec := sh(`for ((i=0;i<` + "10000" + `;i++)); do printf x; read -rn1 _ || exit 9; done`)
	spec.Stdin = subprocess.Input{Kind: subprocess.InputPipe}
	h, err := svc.Spawn(context.Background(), spec)
	require.NoError(t, err)
	defer h.Close()
	ctx := ctxT(t, 60*time.Second)
	next, got := int64(0), 0
	for {
		d, err := h.WaitOutput(ctx, subprocess.Stdout, next, 0)
		require.NoError(t, err, "after %d bytes", got)
		got += len(d.Data)
		next = d.Next
		if d.Done {
			break
		}
		require.NotEmpty(t, d.Data, "a wait that returned without bytes and before the end")
		_, err = h.Stdin().Write([]byte("a"))
		require.NoError(t, err)
	}
	assert.Equal(t, n, got)
	res, err := h.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, res.ExitCode)

	// Bad calls say so at once.
	_, err = h.WaitOutput(ctx, subprocess.Stdout, n+1, 0)
	assert.ErrorIs(t, err, subprocess.ErrInvalid, "an offset past the stream")
	_, err = h.WaitOutput(ctx, subprocess.Stream(7), 0, 0)
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	_, err = h.WaitOutput(nil, subprocess.Stdout, 0, 0) //nolint:staticcheck // the nil context is the test
	assert.ErrorIs(t, err, subprocess.ErrInvalid)

	// A wait for bytes that never come ends with ctx.
	quiet, err := svc.Spawn(context.Background(), sh(`exec sleep 1000`))
	require.NoError(t, err)
	defer quiet.Close()
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = quiet.WaitOutput(short, subprocess.Stdout, 0, 0)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}
