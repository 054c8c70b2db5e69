//go:build !windows

package netproxy

import "syscall"

// The errors of a refused and an unreachable dial.
const (
	errConnRefused = syscall.ECONNREFUSED
	errNetUnreach  = syscall.ENETUNREACH
)
