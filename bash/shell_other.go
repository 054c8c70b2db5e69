//go:build !windows

package bash

// gitBashFinder: none; bash is looked for in PATH here.
func gitBashFinder() func() string { return nil }
