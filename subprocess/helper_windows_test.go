package subprocess

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/windows"
)

// The Windows tests spawn this test binary as their program: with WinHelperVar=MODE in its
// environment it acts as MODE (see winHelper) instead of running tests. Exported for the
// tests of package subprocess_test.
const WinHelperVar = "SUBKIT_WIN_TEST_HELPER"

func init() {
	if mode, ok := os.LookupEnv(WinHelperVar); ok {
		os.Exit(winHelper(mode, os.Args[1:]))
	}
}

// winHelper runs one helper mode:
//
//	echo OUT ERR CODE   prints OUT to stdout and ERR to stderr, exits with CODE
//	bytes N             writes N bytes of WinPattern to stdout
//	cat                 copies stdin to stdout
//	env                 prints its environment, one NAME=VALUE a line
//	sleep               sleeps an hour
//	tree                starts a "sleep" child (no stdio), prints its pid, sleeps an hour
//	linger MS           starts a child (no stdio) that sleeps MS milliseconds, prints its pid, exits
//	hold                starts a "drip" child on its own stdout, prints the child's pid, exits
//	holdin              starts a "sleep" child on its own stdin (never read), prints its pid, exits
//	drip                prints "tick N" every 20 ms until its stdout fails
//	handoff PID         duplicates its stdout handle into process PID, prints the handle, exits
func winHelper(mode string, args []string) int {
	arg := func(i int) string {
		if i < len(args) {
			return args[i]
		}
		return ""
	}
	switch mode {
	case "echo":
		fmt.Fprint(os.Stdout, arg(0))
		fmt.Fprint(os.Stderr, arg(1))
		code, _ := strconv.Atoi(arg(2))
		return code
	case "bytes":
		n, _ := strconv.Atoi(arg(0))
		if _, err := os.Stdout.Write(WinPattern(0, n)); err != nil {
			return 2
		}
		return 0
	case "cat":
		if _, err := io.Copy(os.Stdout, os.Stdin); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 2
		}
		return 0
	case "env":
		for _, kv := range os.Environ() {
			fmt.Println(kv)
		}
		return 0
	case "sleep":
		time.Sleep(time.Hour)
		return 0
	case "sleepms":
		ms, _ := strconv.Atoi(arg(0))
		time.Sleep(time.Duration(ms) * time.Millisecond)
		return 0
	case "tree", "linger", "hold", "holdin":
		child := map[string]string{"tree": "sleep", "linger": "sleepms", "hold": "drip", "holdin": "sleep"}[mode]
		p, err := startChild(child, mode, args)
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 2
		}
		fmt.Println(p.Pid)
		if mode == "tree" {
			time.Sleep(time.Hour)
		}
		return 0
	case "drip":
		for i := 0; ; i++ {
			if _, err := fmt.Printf("tick %d\n", i); err != nil {
				return 0
			}
			time.Sleep(20 * time.Millisecond)
		}
	case "handoff":
		pid, _ := strconv.Atoi(arg(0))
		h, err := handOff(uint32(pid))
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 2
		}
		fmt.Println(h)
		return 0
	}
	fmt.Fprintln(os.Stderr, "helper: unknown mode", mode)
	return 2
}

// startChild starts this binary in mode with args, for the helper in parent mode: with this
// process's stdout for "hold", its stdin for "holdin", else with no stdio.
func startChild(mode, parent string, args []string) (*os.Process, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, args...)
	cmd.Env = append(os.Environ(), WinHelperVar+"="+mode)
	switch parent {
	case "hold":
		cmd.Stdout = os.Stdout
	case "holdin":
		cmd.Stdin = os.Stdin
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return cmd.Process, nil
}

// handOff duplicates this process's stdout handle into process pid and returns the handle's
// value there.
func handOff(pid uint32) (windows.Handle, error) {
	target, err := windows.OpenProcess(windows.PROCESS_DUP_HANDLE, false, pid)
	if err != nil {
		return 0, fmt.Errorf("open process %d: %w", pid, err)
	}
	defer windows.CloseHandle(target)
	var h windows.Handle
	if err := windows.DuplicateHandle(windows.CurrentProcess(), windows.Handle(os.Stdout.Fd()), target, &h,
		0, false, windows.DUPLICATE_SAME_ACCESS); err != nil {
		return 0, fmt.Errorf("duplicate stdout: %w", err)
	}
	return h, nil
}

// WinPattern is bytes [from, from+n) of the stream the "bytes" helper writes.
func WinPattern(from, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + (from+i)%26)
	}
	return b
}

// WineVersion is the version of Wine this test binary runs under ("8.0"), or "" on Windows:
// Wine's ntdll exports wine_get_version, Windows' does not.
func WineVersion() string {
	proc := windows.NewLazySystemDLL("ntdll.dll").NewProc("wine_get_version")
	if proc.Find() != nil {
		return ""
	}
	r, _, _ := proc.Call() // a C string in ntdll's data
	if v := windows.BytePtrToString((*byte)(unsafe.Add(nil, r))); v != "" {
		return v
	}
	return "unknown"
}

// SkipUnderWine skips t under Wine, naming the gap that keeps it from passing there.
func SkipUnderWine(t interface {
	Helper()
	Skipf(string, ...any)
}, gap string) {
	t.Helper()
	if v := WineVersion(); v != "" {
		t.Skipf("Wine %s: %s; runs on Windows only", v, gap)
	}
}

// Running reports whether process pid exists and has not exited.
func Running(pid int) bool {
	h, err := windows.OpenProcess(windows.SYNCHRONIZE, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	ev, _ := windows.WaitForSingleObject(h, 0)
	return ev == uint32(windows.WAIT_TIMEOUT)
}

// Pids parses the pid lines a helper printed.
func Pids(out string) []int {
	var pids []int
	for _, f := range strings.Fields(out) {
		if n, err := strconv.Atoi(f); err == nil {
			pids = append(pids, n)
		}
	}
	return pids
}
