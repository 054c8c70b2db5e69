//go:build linux

package linux

import (
	"context"
	"testing"

	"github.com/shirou/gopsutil/v4/process"
	"github.com/stretchr/testify/require"
)

// benchProcs is the table size the comparison is made at.
const benchProcs = 200

// fillTable starts sleep children until the system has at least benchProcs
// processes; they are killed and reaped at cleanup.
func fillTable(tb testing.TB) {
	tb.Helper()
	stats, err := ReadAll()
	require.NoError(tb, err)
	// A margin, as unrelated processes may exit meanwhile.
	if missing := benchProcs + 20 - len(stats); missing > 0 {
		startSleeps(tb, missing)
	}
}

// gopsutilTable is the equivalent query through gopsutil: every process with
// its parent and start time.
func gopsutilTable(ctx context.Context) (int, error) {
	procs, err := process.ProcessesWithContext(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range procs {
		if _, err := p.PpidWithContext(ctx); err != nil {
			continue
		}
		if _, err := p.CreateTimeWithContext(ctx); err != nil {
			continue
		}
		n++
	}
	return n, nil
}

func BenchmarkReadAll(b *testing.B) {
	fillTable(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ReadAll(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGopsutil(b *testing.B) {
	fillTable(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := gopsutilTable(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
