package guard

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// rssFile is this process's RssFile, in kB.
func rssFile(t *testing.T) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "RssFile:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			if err != nil {
				t.Fatal(err)
			}
			return kb
		}
	}
	t.Fatal("no RssFile in /proc/self/status")
	return 0
}

// The read-only file pages are dropped from the resident set, and what the process goes on
// using reads back the same.
func TestTrimFilePages(t *testing.T) {
	before := rssFile(t)
	dropped := trimFilePages()
	after := rssFile(t)
	t.Logf("RssFile %d kB before, %d kB after; %d kB of mappings dropped", before, after, dropped>>10)
	if dropped == 0 {
		t.Fatal("nothing dropped")
	}
	if after >= before {
		t.Errorf("RssFile did not fall: %d kB before, %d kB after", before, after)
	}
	// Code, constants and data still work after the drop.
	if got := strconv.Itoa(12345) + strings.Repeat("x", 3); got != "12345xxx" {
		t.Fatalf("got %q", got)
	}
}
