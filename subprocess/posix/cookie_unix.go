//go:build unix && !linux

package posix

// Process environments are not readable here; see Cookie.
const canReadEnviron = false

func sameUser(pid int) bool { return false }

// startTokenNow: without Find there is nothing to fence.
func startTokenNow() uint64 { return 0 }
