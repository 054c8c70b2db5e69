package main

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMedian(t *testing.T) {
	assert.True(t, math.IsNaN(median(nil)))
	assert.Equal(t, 3.0, median([]float64{3}))
	assert.Equal(t, 2.0, median([]float64{3, 1, 2}))
	assert.Equal(t, 2.5, median([]float64{4, 1, 3, 2}))
	xs := []float64{5, 1, 4}
	median(xs)
	assert.Equal(t, []float64{5, 1, 4}, xs, "median must not reorder its input")
}

const sample = `loadavg-before: 0.50 0.40 0.30 1/200 1234
run-started: 2026-01-02T01:00:00Z
goos: linux
goarch: amd64
pkg: github.com/subkit/subkit/bench
cpu: Some CPU @ 2.00GHz
BenchmarkSpawnTrue/subkit-2         	    1000	   1100000 ns/op	   14033 B/op	      75 allocs/op
BenchmarkSpawnTrue/subkit-2         	    1000	   1000000 ns/op	   14033 B/op	      75 allocs/op
BenchmarkSpawnTrue/subkit-2         	    1000	   1300000 ns/op	   14033 B/op	      75 allocs/op
BenchmarkSpawnTrue/baseline-2       	    1000	   1000000 ns/op	    8290 B/op	      56 allocs/op
BenchmarkSpawnTrue/baseline-2       	    1000	    900000 ns/op	    8290 B/op	      56 allocs/op
BenchmarkSpawnTrue/baseline-2       	    1000	   1200000 ns/op	    8290 B/op	      56 allocs/op
BenchmarkBashTrue/subkit-2          	     100	  12000000 ns/op	   19950 B/op	     167 allocs/op
BenchmarkBashTrue/baseline-2        	     100	  10000000 ns/op	   12170 B/op	     106 allocs/op
BenchmarkLSPRequests1000/subkit-2   	      12	  90000000 ns/op	     90000 ns/req	 1367332 B/op	   25983 allocs/op
BenchmarkLSPRequests1000/subkit-2   	      12	  80000000 ns/op	     80000 ns/req	 1367332 B/op	   25983 allocs/op
BenchmarkLSPRequests1000/baseline-2 	      25	  40000000 ns/op	     40000 ns/req	      80 B/op	       0 allocs/op
BenchmarkCollect256MiB/subkit-2     	       2	 316795650 ns/op	 800.00 MB/s	  178112 B/op	      76 allocs/op
BenchmarkCollect256MiB/baseline-2   	       1	 343316436 ns/op	1000.00 MB/s	   15264 B/op	      45 allocs/op
BenchmarkConcurrentSpawn500/subkit-2             	       1	1685667764 ns/op	         0 fds-left	       300 spawns/s	 7448568 B/op	   40397 allocs/op
BenchmarkConcurrentSpawn500/subkit-2             	       1	1685667764 ns/op	         2 fds-left	       300 spawns/s	 7448568 B/op	   40397 allocs/op
BenchmarkConcurrentSpawn500/baseline-2           	       1	2342670612 ns/op	         0 fds-left	       300 spawns/s	 4205936 B/op	   29977 allocs/op
    some_test.go:12: a log line: with a colon
BenchmarkTerminateTree100/subkit-2           	--- FAIL: BenchmarkTerminateTree100/subkit
    tree_linux_test.go:60: failed
--- FAIL: BenchmarkTerminateTree100/subkit-2
PASS
ok  	github.com/subkit/subkit/bench	17.966s
loadavg-after: 2.00 1.00 0.50 3/210 1300
`

func TestParseAndReport(t *testing.T) {
	res, err := parse(strings.NewReader(sample))
	require.NoError(t, err)
	assert.Equal(t, "2", res.procs)
	assert.Equal(t, "linux", res.config["goos"])
	assert.Equal(t, "Some CPU @ 2.00GHz", res.config["cpu"])
	assert.Equal(t, []string{"BenchmarkTerminateTree100/subkit"}, res.failures)
	assert.Equal(t, []float64{1100000, 1000000, 1300000}, res.samples["BenchmarkSpawnTrue/subkit"]["ns/op"])

	s, b, m, met, ok := timeRatio(1.10)(res, "BenchmarkSpawnTrue/subkit", "BenchmarkSpawnTrue/baseline")
	require.True(t, ok)
	assert.Equal(t, "1.1 ms", s)
	assert.Equal(t, "1 ms", b)
	assert.Equal(t, "time ratio 1.10", m) // 1.1 / 1.0, medians of the same run
	assert.True(t, met)

	_, _, m, met, ok = timeRatio(1.10)(res, "BenchmarkBashTrue/subkit", "BenchmarkBashTrue/baseline")
	require.True(t, ok)
	assert.Equal(t, "time ratio 1.20", m)
	assert.False(t, met)

	s, b, m, met, ok = perRequestReport(res, "BenchmarkLSPRequests1000/subkit", "BenchmarkLSPRequests1000/baseline")
	require.True(t, ok)
	assert.Equal(t, "85 µs per request", s) // median of 90 and 80 µs
	assert.Equal(t, "40 µs per request", b)
	assert.Equal(t, "time ratio 2.12 per request", m)
	assert.True(t, met, "a report row has no limit")
	_, _, _, _, ok = perRequestReport(res, "BenchmarkSpawnTrue/subkit", "BenchmarkSpawnTrue/baseline")
	assert.False(t, ok, "no ns/req samples")

	_, _, m, met, ok = throughputRatio(0.90)(res, "BenchmarkCollect256MiB/subkit", "BenchmarkCollect256MiB/baseline")
	require.True(t, ok)
	assert.Equal(t, "throughput ratio 0.80", m)
	assert.False(t, met)

	_, _, m, met, ok = spawnRate(0.90)(res, "BenchmarkConcurrentSpawn500/subkit", "BenchmarkConcurrentSpawn500/baseline")
	require.True(t, ok)
	assert.Contains(t, m, "2 fds left open", "one run that leaked counts")
	assert.False(t, met)

	var out strings.Builder
	write(&out, res, host{CPUs: 2, CPUModel: "Some CPU", Memory: "1.0 GiB", Kernel: "Linux 6", LoadAfter: "1 1 1", GoVersion: "go1.26 linux/amd64"},
		"go test -bench .", "results.txt", "findings.md", []byte("A finding.\n"), time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC))
	doc := out.String()
	assert.Contains(t, doc, "median of the 3 runs")
	assert.Contains(t, doc, "| 1 | spawn and settle")
	assert.NotContains(t, doc, "pending")
	assert.Contains(t, doc, "85 µs per request | 40 µs per request | time ratio 2.12 per request | reported (no target) |")
	assert.Contains(t, doc, "- row 2 (BenchmarkBashTrue): time ratio 1.20, target time ratio <= 1.10")
	assert.Contains(t, doc, "**MISSED**")
	assert.Contains(t, doc, "no data") // rows whose benchmarks are absent from the sample
	assert.Contains(t, doc, "before the run: 0.50 0.40 0.30; after the run: 2.00 1.00 0.50")
	assert.Contains(t, doc, "| Run started | 2026-01-02 01:00 UTC |")
	assert.Contains(t, doc, "## Findings\n\nA finding.")
	assert.Contains(t, doc, "Benchmarks failed in this run")
}

func TestPendingRow(t *testing.T) {
	saved := rows
	t.Cleanup(func() { rows = saved })
	rows = append(slices.Clone(saved), row{Title: "future row", Baseline: "none", Target: "report",
		Bench: "BenchmarkFuture", Check: perRequestReport, Pending: "pending: not built yet"})
	res, err := parse(strings.NewReader(sample))
	require.NoError(t, err)
	var out strings.Builder
	write(&out, res, host{}, "", "results.txt", "", nil, time.Now())
	doc := out.String()
	assert.Contains(t, doc, "| future row | none | report | - | - | - | pending: not built yet |")
	assert.NotContains(t, doc, fmt.Sprintf("row %d (BenchmarkFuture)", len(rows)), "a pending row is not a missed one")
}

func TestGroup(t *testing.T) {
	assert.Equal(t, "0", group(0))
	assert.Equal(t, "999", group(999))
	assert.Equal(t, "4,259,840", group(4259840))
	assert.Equal(t, "-1,000", group(-1000))
}
