//go:build linux

package bash_test

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/bash"
	"github.com/subkit/subkit/internal/testutil"
)

// 1,000 background processes, each read to its end marker and terminated; memory and
// descriptors come back to their baseline (NoLeaks checks descriptors and processes).
func TestLoadThousandBackgroundProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	const total, workers = 1000, 32
	e, mark := newExecutor(t, bash.Config{MaxBackground: workers})
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)

	var next, failures atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= total {
				if err := oneBackground(e); err != nil {
					failures.Add(1)
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	require.Zero(t, failures.Load())
	assert.Zero(t, e.Stats().Running)
	assert.Empty(t, testutil.Marked(mark))

	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	grew := int64(after.HeapInuse) - int64(before.HeapInuse)
	assert.Less(t, grew, int64(16<<20), "heap in use grew by %d bytes over 1,000 processes", grew)
}

func oneBackground(e *bash.Executor) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := e.Start(ctx, bash.Request{Command: "seq 1 200; echo END; exec sleep 1000"})
	if err != nil {
		return err
	}
	defer p.Close()
	var off bash.Offsets
	var out strings.Builder
	for !strings.Contains(out.String(), "END\n") {
		d, err := p.WaitOutput(ctx, off, 0)
		if err != nil {
			return err
		}
		out.Write(d.Stdout.Data)
		off = d.Next
	}
	if err := p.Terminate(ctx); err != nil {
		return err
	}
	_, err = p.Wait(ctx)
	return err
}
