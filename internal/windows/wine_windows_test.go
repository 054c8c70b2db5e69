package windows

import (
	"testing"
	"unsafe"

	xwin "golang.org/x/sys/windows"
)

// wineVersion is the version of Wine this test binary runs under ("8.0"), or "" on Windows.
// Wine's ntdll exports wine_get_version; Windows' does not.
func wineVersion() string {
	proc := xwin.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version")
	if proc.Find() != nil {
		return ""
	}
	r, _, _ := proc.Call() // a C string in ntdll's data
	if v := xwin.BytePtrToString((*byte)(unsafe.Add(nil, r))); v != "" {
		return v
	}
	return "unknown"
}

// skipUnderWine skips t under Wine, naming the gap that keeps it from passing there; on
// Windows it does nothing.
func skipUnderWine(t *testing.T, gap string) {
	t.Helper()
	if v := wineVersion(); v != "" {
		t.Skipf("Wine %s: %s; runs on Windows only", v, gap)
	}
}
