// Package winapi holds the Windows API wrappers that golang.org/x/sys/windows lacks, for the
// job-object backend in internal/windows. The wrappers in zsyscall_windows.go are generated
// by mkwinsyscall from the //sys lines of syscall_windows.go; `go generate ./...` regenerates
// them (the directive lives in this untagged file so that it runs on every OS).
package winapi

//go:generate go run golang.org/x/sys/windows/mkwinsyscall -output zsyscall_windows.go syscall_windows.go
