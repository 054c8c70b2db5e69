// Package bench holds side-by-side benchmarks of subkit against the raw standard library (and,
// for process-table reads, gopsutil). Every row of BENCHMARKS.md is a pair of benchmarks run in
// the same `go test -bench` invocation, BenchmarkXxx/subkit and BenchmarkXxx/baseline, so each
// ratio comes from one run on one machine.
//
// Row numbers in the comments are those of the BENCHMARKS.md table, which follows issue 8.
//
// Run them with `make bench` (COUNT=5 by default): it keeps the raw output in
// bench/results.txt and regenerates BENCHMARKS.md with bench/report, which takes per-benchmark
// medians and checks each row against its target. Hand-written findings for missed targets
// live in bench/findings.md and are included verbatim.
//
// The benchmarks are Linux-only (they read /proc and rely on process groups); the package
// builds everywhere so `go vet ./...` covers it on every target. Nothing here asserts on time:
// `go test` without -bench runs no benchmark.
package bench
