//go:build linux

package linux

import (
	"os"
	"testing"
)

// BenchmarkCensusCold is a Census's first scan of a table of benchProcs processes: an fstatat
// of /proc/<pid> for the owner, then, for this user's processes, the stat file, as ReadAll
// reads it.
func BenchmarkCensusCold(b *testing.B) {
	fillTable(b)
	uid := os.Getuid()
	b.ReportAllocs()
	for b.Loop() {
		var c Census
		if _, err := c.Since(uid, 0, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCensusWarm is every later scan of the same table: one fstatat per process, and no
// stat file read.
func BenchmarkCensusWarm(b *testing.B) {
	fillTable(b)
	uid := os.Getuid()
	var c Census
	if _, err := c.Since(uid, 0, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Since(uid, 0, nil); err != nil {
			b.Fatal(err)
		}
	}
}
