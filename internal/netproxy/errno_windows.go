package netproxy

import "syscall"

// The errors of a refused and an unreachable dial, as Windows reports them.
const (
	errConnRefused = syscall.Errno(10061) // WSAECONNREFUSED
	errNetUnreach  = syscall.Errno(10051) // WSAENETUNREACH
)
