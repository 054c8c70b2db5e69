package coderuntime

import (
	_ "embed"
)

// The session drivers, written to each session's directory (see Session).
var (
	//go:embed driver/python.py
	pythonDriver string
	//go:embed driver/node.js
	nodeDriver string
)

// sessionLanguage is what a session needs to know about its language.
type sessionLanguage struct {
	driverFile string // the driver's name in the session directory
	driver     string // its source
	// args returns the interpreter's arguments for the driver, the control socket's name (both
	// relative to the session directory, the interpreter's working directory) and the working
	// directory of the code.
	args func(driver, control, work string) []string
	// env is set under the session's Env.
	env []string
}

// controlName is the control socket's name in the session directory.
const controlName = "ctl"

// mplBackend is the matplotlib backend the python3 driver provides (figures come back as
// image/png results); it is set in MPLBACKEND unless the environment names one.
const mplBackend = "module://subkit_inline_backend"

func lookupSessionLanguage(l Language) (sessionLanguage, bool) {
	switch l {
	case Python3:
		return sessionLanguage{
			driverFile: "driver.py", driver: pythonDriver,
			args: func(driver, control, work string) []string { return []string{driver, control, work} },
			env:  []string{"PYTHONUTF8=1", "PYTHONIOENCODING=utf-8"},
		}, true
	case Node:
		return sessionLanguage{
			driverFile: "driver.js", driver: nodeDriver,
			// node's own top-level await rewrite (internal/repl/await) keeps a cell's declarations.
			args: func(driver, control, work string) []string {
				return []string{"--expose-internals", driver, control, work}
			},
		}, true
	}
	return sessionLanguage{}, false
}
