package windows

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// helperEnv turns the test binary into a stand-in for taskkill.exe (see helperMain), so
// ExecRunner is tested with a real child on any OS.
const helperEnv = "SUBKIT_WINDOWS_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode, ok := os.LookupEnv(helperEnv); ok {
		os.Exit(helperMain(mode, os.Args[1:]))
	}
	goleak.VerifyTestMain(m)
}

// helperMain acts as taskkill: mode is "<exit code>:<output>" (output may hold \n escapes);
// it prints the output, then the arguments it got, and exits with the code. Mode "sleep"
// blocks until killed; mode "tree" starts a "sleep" child of its own, prints its pid, and
// blocks until killed; mode "break" prints "ready" and exits with breakExit once it receives
// os.Interrupt (CTRL_BREAK_EVENT on Windows).
func helperMain(mode string, args []string) int {
	switch mode {
	case "sleep":
		time.Sleep(time.Hour)
		return 0
	case "break":
		return breakHelper()
	case "tree":
		self, err := os.Executable()
		if err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 2
		}
		child := exec.Command(self)
		child.Env = append(os.Environ(), helperEnv+"=sleep")
		if err := child.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "helper:", err)
			return 2
		}
		fmt.Println(child.Process.Pid)
		time.Sleep(time.Hour)
		return 0
	}
	codeText, out, _ := strings.Cut(mode, ":")
	code, err := strconv.Atoi(codeText)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper: bad mode", mode)
		return 2
	}
	fmt.Print(strings.ReplaceAll(out, `\n`, "\n"))
	fmt.Fprintf(os.Stderr, "args=%s\n", strings.Join(args, " "))
	return code
}

// breakExit is the exit code of the "break" helper once interrupted.
const breakExit = 42

func breakHelper() int {
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt)
	fmt.Println("ready")
	select {
	case <-c:
		return breakExit
	case <-time.After(time.Minute):
		return 3
	}
}
