package subprocess

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/subkit/subkit/internal/posixsh"
)

// helperReady records that this binary called HelperMain, and so can serve as the kit's
// helper: a fact about the whole process, kept in the one place that can know it.
var helperReady atomic.Bool

// HelperMain makes this binary the kit's helper executable. Call it first thing in main (and
// in TestMain of tests that use Config.Guard):
//
//	func main() {
//		subprocess.HelperMain()
//		...
//	}
//
// When the process was started as one of the kit's helpers (the Service's guard, the sandbox
// hop that confines itself and execs the program, or the kit's shell of Service.Shell), HelperMain runs that role and exits
// the process (or becomes the program); otherwise it returns at once, and from then on a
// Service with Config.Guard or a sandbox policy and no Config.Helper uses this binary as its
// helper.
func HelperMain() {
	role := os.Getenv(helperRoleVar)
	switch role {
	case "":
		helperReady.Store(true)
		return
	case posixsh.Role: // every OS; the script's programs must not inherit the role
		os.Unsetenv(helperRoleVar)
		os.Exit(posixsh.Main(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(runHelper(role))
}

// helperPath is the helper binary a Service runs for feature (the Config field or method that
// needs it): configHelper (Config.Helper) when set, or this binary when it called HelperMain.
func helperPath(configHelper, feature string) (string, error) {
	if configHelper != "" {
		fi, err := os.Stat(configHelper)
		if err != nil {
			return "", &Error{Op: "new service", Name: "Config.Helper", Kind: pathKind(err), Err: err,
				Hint: "set Config.Helper to the path of a helper binary, such as the subkit CLI"}
		}
		if fi.IsDir() || fi.Mode()&0o111 == 0 {
			return "", invalid("new service", "Config.Helper", configHelper+" is not an executable file")
		}
		return configHelper, nil
	}
	if !helperReady.Load() {
		return "", &Error{Op: "new service", Name: feature, Kind: ErrInvalid,
			Err:  errors.New("no helper executable for " + feature),
			Hint: "call subprocess.HelperMain() at the top of main (and of TestMain), or set Config.Helper to the path of the subkit binary"}
	}
	self, err := os.Executable()
	if err != nil {
		return "", &Error{Op: "new service", Name: feature, Kind: ErrSystem, Err: fmt.Errorf("this binary's path: %w", err),
			Hint: "set Config.Helper to the path of this binary"}
	}
	return self, nil
}
