// Command report turns the raw output of the side-by-side benchmarks (bench/results.txt) into
// BENCHMARKS.md: the machine, the Go version, the command, and one table that checks every row
// against its target.
//
// Each figure is the median of the -count runs of one benchmark (benchstat-style). A ratio is
// always formed from two medians of the same results file, that is of one `go test` run, never
// across runs. Hand-written findings (profiles of missed targets and what would fix them) come
// from a separate file, included verbatim.
//
// Usage (what `make bench` runs):
//
//	go run ./bench/report -in bench/results.txt -findings bench/findings.md -out BENCHMARKS.md -command '...'
package main
