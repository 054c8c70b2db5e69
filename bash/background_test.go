//go:build unix

package bash_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/bash"
	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/procinspect"
)

// Background offset reads, while running and after exit, agree byte for byte with the full
// stream; the in-memory tail is small, so most bytes come from the spill file.
func TestBackgroundOffsetReads(t *testing.T) {
	e, _ := newExecutor(t, bash.Config{MaxOutputBytes: 100})
	var want bytes.Buffer
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&want, "%05d é\n", i)
	}
	p := start(t, e, `for ((i=1;i<=3000;i++)); do printf '%05d é\n' $i; if ((i%300==0)); then sleep 0.02; fi; done; echo bye >&2`)
	assert.NotZero(t, p.Pid())

	// Two readers with their own cursors: one from the start in odd-sized steps, one that
	// joins midway from offset 0 with everything at once.
	var wg sync.WaitGroup
	var second []byte
	wg.Go(func() {
		_, err := p.WaitOutput(ctxT(t, time.Minute), bash.Offsets{}, 1) // once output has come
		assert.NoError(t, err)
		d, err := p.ReadOutput(bash.Offsets{}, 0)
		assert.NoError(t, err)
		assert.Zero(t, d.Stdout.Dropped)
		second = d.Stdout.Data
	})
	stdout, stderr, last := readAll(t, p, bash.Offsets{}, 333)
	wg.Wait()
	assert.Equal(t, want.String(), string(stdout))
	assert.Equal(t, "bye\n", string(stderr))
	assert.True(t, bytes.HasPrefix(want.Bytes(), second), "a full re-read while running is a prefix of the stream")
	require.NotNil(t, last.Result)
	assert.Equal(t, 0, last.Result.ExitCode)
	assert.Zero(t, last.Result.Timeout)
	assert.True(t, last.Result.Stdout.Truncated)
	assert.NotEmpty(t, last.Result.Stdout.SpillPath)

	// After exit: full and partial re-reads.
	d, err := p.ReadOutput(bash.Offsets{}, 0)
	require.NoError(t, err)
	assert.Equal(t, want.Bytes(), d.Stdout.Data)
	assert.True(t, d.Done())
	d, err = p.ReadOutput(bash.Offsets{Stdout: 10 * 9, Stderr: 1}, 18)
	require.NoError(t, err)
	assert.Equal(t, "00011 é\n00012 é\n", string(d.Stdout.Data))
	assert.Equal(t, "ye\n", string(d.Stderr.Data))
	assert.Equal(t, bash.Offsets{Stdout: 12 * 9, Stderr: 4}, d.Next)
	_, err = p.ReadOutput(bash.Offsets{Stdout: int64(want.Len()) + 1}, 0)
	requestErr(t, err, "Offsets.Stdout", "")

	text := bash.RenderDelta(d)
	assert.Contains(t, text, "00011 é\n00012 é\n[stderr]\nye\n")
	assert.Contains(t, text, fmt.Sprintf("[background process %d has ended; more output remains from stdout offset 108, stderr offset 4]", p.Pid()))
	assert.Contains(t, text, "[exit code 0]")

	// A capped read that would end inside "é" stops before it, unless that is all it has.
	d, err = p.ReadOutput(bash.Offsets{}, 7)
	require.NoError(t, err)
	assert.Equal(t, "00001 ", string(d.Stdout.Data))
	assert.EqualValues(t, 6, d.Next.Stdout)
	d, err = p.ReadOutput(bash.Offsets{Stdout: 6}, 1)
	require.NoError(t, err)
	assert.Equal(t, "\xc3", string(d.Stdout.Data))

	require.NoError(t, p.Close())
	d, err = p.ReadOutput(bash.Offsets{}, 0)
	require.NoError(t, err, "still readable after Close")
	assert.Equal(t, want.Bytes(), d.Stdout.Data)
}

// Without a spill file (the stream outgrew maxSpillBytes) early bytes are reported dropped.
func TestBackgroundDroppedBytes(t *testing.T) {
	e, _ := newExecutor(t, bash.Config{MaxOutputBytes: 100, MaxSpillBytes: 1000})
	p := start(t, e, `seq 1 1000`)
	res, err := p.Wait(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Empty(t, res.Stdout.SpillPath)
	d, err := p.ReadOutput(bash.Offsets{}, 0)
	require.NoError(t, err)
	assert.EqualValues(t, res.Stdout.TotalBytes-100, d.Stdout.Dropped)
	assert.Len(t, d.Stdout.Data, 100)
	text := bash.RenderDelta(d)
	assert.True(t, strings.HasPrefix(text, fmt.Sprintf("[%d bytes of stdout before offset %d are no longer available]\n", d.Stdout.Dropped, d.Stdout.From)), text)
	assert.Contains(t, text, "all output has been read]\n[exit code 0]\n")
}

func TestBackgroundTerminateAndWait(t *testing.T) {
	e, _ := newExecutor(t, bash.Config{Timeout: 100 * time.Millisecond, Grace: 300 * time.Millisecond})
	p := start(t, e, "echo up; sleep 1000")
	assert.Equal(t, "echo up; sleep 1000", p.Command())

	// No timeout applies to a background process, and Wait does not end it.
	_, err := p.Wait(ctxT(t, 300*time.Millisecond))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	d, err := p.ReadOutput(bash.Offsets{}, 0)
	require.NoError(t, err)
	assert.Nil(t, d.Result)
	assert.Equal(t, fmt.Sprintf("up\n[background process %d is still running; read new output from stdout offset 3, stderr offset 0]\n", p.Pid()), bash.RenderDelta(d))
	assert.Equal(t, 1, e.Stats().Running)

	require.NoError(t, p.Terminate(ctxT(t, 10*time.Second)))
	require.NoError(t, p.Terminate(ctxT(t, 10*time.Second)), "twice is a no-op")
	assert.Equal(t, 0, e.Stats().Running)
	res, err := p.Wait(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.True(t, res.Cancelled)
	assert.False(t, res.TimedOut)
	assert.Equal(t, "SIGTERM", res.Signal)
	assert.Equal(t, "up\n", string(res.Stdout.Tail))
	require.NoError(t, p.Close())
	require.NoError(t, p.Close(), "closing twice is safe")
	assert.Equal(t, 0, e.Stats().Open)

	_, err = e.Start(context.Background(), bash.Request{Command: "true", Timeout: time.Second})
	requestErr(t, err, "Timeout", "")

	// Outlives the foreground timeout, ends by itself.
	p = start(t, e, "sleep 0.4; echo done")
	res, err = p.Wait(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.True(t, res.Success())
	assert.Equal(t, "done\n", string(res.Stdout.Tail))
}

func TestBackgroundRunningCap(t *testing.T) {
	e, _ := newExecutor(t, bash.Config{MaxBackground: 2})
	p1 := start(t, e, "sleep 1000")
	start(t, e, "sleep 1000")
	_, err := e.Start(context.Background(), bash.Request{Command: "true"})
	require.ErrorIs(t, err, bash.ErrTooMany)
	var be *bash.Error
	require.True(t, errors.As(err, &be))
	assert.Contains(t, err.Error(), "maxBackground")
	assert.Contains(t, bash.Render(bash.Result{}, err), "[request refused, the command did not run: ")
	// Foreground calls are not capped.
	assert.Equal(t, 0, exec(t, e, bash.Request{Command: "true"}).ExitCode)

	require.NoError(t, p1.Terminate(ctxT(t, 10*time.Second)))
	// p3 holds the freed slot until the test lets it exit.
	release := filepath.Join(t.TempDir(), "release")
	p3 := start(t, e, "while [ ! -e "+release+" ]; do sleep 0.01; done")
	_, err = e.Start(context.Background(), bash.Request{Command: "true"})
	require.ErrorIs(t, err, bash.ErrTooMany)
	require.NoError(t, os.WriteFile(release, nil, 0o600))
	// A process that exits by itself frees its slot once its result is in.
	_, err = p3.Wait(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, 1, e.Stats().Running)
	start(t, e, "true")
}

// A background command that leaves a daemon holds its slot until the daemon is gone.
func TestBackgroundSurvivor(t *testing.T) {
	e, _ := newExecutor(t, bash.Config{Grace: 200 * time.Millisecond})
	p := start(t, e, "sleep 1000 >/dev/null 2>&1 & echo started")
	res, err := p.Wait(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	require.True(t, res.Lingering)
	require.Len(t, res.Survivors, 1)
	assert.Equal(t, 1, e.Stats().Running)
	d, err := p.ReadOutput(bash.Offsets{}, 0)
	require.NoError(t, err)
	assert.Contains(t, bash.RenderDelta(d), "[1 process the command started is still running in the background")
	require.NoError(t, p.Close())
	alive, err := procinspect.Alive(context.Background(), res.Survivors[0].Identity)
	require.NoError(t, err)
	assert.False(t, alive)
	assert.Equal(t, bash.Stats{}, e.Stats())
}

// Close ends every running thing, foreground and background, and waits for it.
func TestCloseEndsEverything(t *testing.T) {
	e, _ := newExecutor(t, bash.Config{Grace: 200 * time.Millisecond})
	stubborn := start(t, e, "trap '' TERM; sleep 1000 & echo up; wait")
	plain := start(t, e, "sleep 1000")
	var fg bash.Result
	var fgErr error
	var wg sync.WaitGroup
	sig := testutil.NewSignals(t)
	wg.Go(func() {
		fg, fgErr = e.Exec(context.Background(), bash.Request{Command: "echo fg; echo > " + sig.Path + "; sleep 1000"})
	})
	lingering := exec(t, e, bash.Request{Command: "sleep 1000 >/dev/null 2>&1 &"})
	require.True(t, lingering.Lingering)
	require.NotEmpty(t, lingering.Survivors, "the listing failed: %v", lingering.SurvivorsErr)
	d, err := stubborn.WaitOutput(ctxT(t, time.Minute), bash.Offsets{}, 0)
	require.NoError(t, err)
	require.Equal(t, "up\n", string(d.Stdout.Data), "the stubborn process has set its trap")
	sig.Next(t) // the foreground command runs

	require.NoError(t, e.Close())
	require.NoError(t, e.Close())
	wg.Wait()
	require.NoError(t, fgErr)
	assert.True(t, fg.Cancelled)
	assert.Equal(t, "fg\n", string(fg.Stdout.Tail))
	for _, p := range []*bash.Process{stubborn, plain} {
		select {
		case <-p.Done():
		default:
			t.Fatal("Close returned before a background result was final")
		}
		res, err := p.Wait(context.Background())
		require.NoError(t, err)
		assert.True(t, res.Cancelled)
		assert.NotEmpty(t, res.Signal)
		require.NoError(t, p.Close())
	}
	r, _ := stubborn.Wait(context.Background())
	assert.Equal(t, "SIGKILL", r.Signal)
	alive, err := procinspect.Alive(context.Background(), lingering.Survivors[0].Identity)
	require.NoError(t, err)
	assert.False(t, alive)
	assert.Equal(t, bash.Stats{}, e.Stats())
}

// Calls racing Close either complete or fail with ErrClosed; nothing is left behind.
func TestCloseRacesCalls(t *testing.T) {
	e, _ := newExecutor(t, bash.Config{Grace: 100 * time.Millisecond, MaxBackground: 8})
	sig := testutil.NewSignals(t)
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Go(func() {
			for j := 0; j < 4; j++ {
				if j%2 == 0 {
					_, err := e.Exec(context.Background(), bash.Request{Command: "echo x; echo > " + sig.Path + "; sleep 1000"})
					if err != nil {
						assert.ErrorIs(t, err, bash.ErrClosed)
						return
					}
					continue
				}
				p, err := e.Start(context.Background(), bash.Request{Command: "echo y; sleep 1000"})
				if err != nil {
					if !errors.Is(err, bash.ErrTooMany) {
						assert.ErrorIs(t, err, bash.ErrClosed)
						return
					}
					continue
				}
				wg.Go(func() { p.ReadOutput(bash.Offsets{}, 0) })
				wg.Go(func() { p.Wait(ctxT(t, 20*time.Second)) })
				wg.Go(func() { p.Terminate(ctxT(t, 20*time.Second)) })
				wg.Go(func() { e.Sweep(context.Background()) })
			}
		})
	}
	sig.WaitCount(t, 6) // every caller has a command running: Close races them all
	require.NoError(t, e.Close())
	wg.Wait()
	assert.Equal(t, bash.Stats{}, e.Stats())
}

// WaitOutput follows a background process without polling and misses nothing, and a process
// whose streams have ended is waited for without spinning.
func TestProcessWaitOutput(t *testing.T) {
	e, _ := newExecutor(t, bash.Config{})
	p := start(t, e, `for i in 1 2 3; do echo "line $i"; sleep 0.02; done; echo err >&2`)
	var stdout, stderr strings.Builder
	next := bash.Offsets{}
	for {
		d, err := p.WaitOutput(ctxT(t, 10*time.Second), next, 0)
		require.NoError(t, err)
		stdout.Write(d.Stdout.Data)
		stderr.Write(d.Stderr.Data)
		next = d.Next
		if d.Done() {
			break
		}
	}
	assert.Equal(t, "line 1\nline 2\nline 3\n", stdout.String())
	assert.Equal(t, "err\n", stderr.String())

	closed := start(t, e, `exec >&- 2>&-; sleep 0.3`)
	d, err := closed.WaitOutput(ctxT(t, 10*time.Second), bash.Offsets{}, 0)
	require.NoError(t, err)
	require.NotNil(t, d.Result, "waits for the end once both streams are closed")

	quiet := start(t, e, `sleep 1000`)
	short, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = quiet.WaitOutput(short, bash.Offsets{}, 0)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	_, err = quiet.WaitOutput(nil, bash.Offsets{}, 0) //nolint:staticcheck // the nil context is the test
	assert.ErrorIs(t, err, bash.ErrInvalid)
}
