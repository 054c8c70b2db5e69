package testutil

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// MarkVar is the environment variable through which a test marks the processes it starts, so
// a leak check can find every one of them, however far it re-parented itself.
const MarkVar = "SUBKIT_TEST_MARK"

// Mark returns a fresh random marker value.
func Mark() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Env returns the host environment with MarkVar=mark appended.
func Env(mark string) []string {
	return append(os.Environ(), MarkVar+"="+mark)
}

// NoLeaks records the descriptors open now and registers a cleanup (run after every cleanup
// registered later) that fails the test when a process carrying mark is still alive or the
// descriptor count has not come back. Processes found are killed so one failure does not
// cascade.
func NoLeaks(t testing.TB, mark string) {
	t.Helper()
	fds := countFDs()
	t.Cleanup(func() {
		deadline := time.Now().Add(3 * time.Second)
		var left []int
		for {
			left = Marked(mark)
			if len(left) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if len(left) > 0 {
			for _, pid := range left {
				killPid(pid)
			}
			t.Errorf("leak: processes still alive after the test: %v", describe(left))
		}
		var now int
		for {
			now = countFDs()
			if now <= fds || time.Now().After(deadline) {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if fds >= 0 && now > fds {
			t.Errorf("leak: %d file descriptors open after the test, %d before: %s", now, fds, listFDs())
		}
	})
}

// EmptyDir fails the test at cleanup time when dir holds anything.
func EmptyDir(t testing.TB, dir string) {
	t.Helper()
	t.Cleanup(func() {
		ents, _ := os.ReadDir(dir)
		if len(ents) > 0 {
			var names []string
			for _, e := range ents {
				names = append(names, filepath.Join(dir, e.Name()))
			}
			t.Errorf("leak: left in %s: %s", dir, strings.Join(names, ", "))
		}
	})
}

// DirOutsideTmp makes a new directory, removed when the test ends, outside /tmp, /var/tmp,
// /run and /dev/shm: in the user's cache directory (not the checkout, which may itself lie in
// /tmp). A namespaced sandbox replaces those by private ones, where a test's files outside the
// writable roots would not be seen at all (nor a write there refused: it would vanish).
func DirOutsideTmp(t testing.TB, prefix string) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatalf("a directory outside /tmp: %v", err)
	}
	base := filepath.Join(cache, "subkit-test-roots")
	for _, private := range []string{"/tmp", "/var/tmp", "/run", "/dev/shm"} {
		if strings.HasPrefix(base+"/", private+"/") {
			t.Fatalf("the user's cache directory %s lies in %s, which a sandbox makes private: set XDG_CACHE_HOME elsewhere", cache, private)
		}
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(base, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := os.RemoveAll(dir); err != nil {
			t.Error(err)
		}
	})
	return dir
}
