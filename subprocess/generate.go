package subprocess

//go:generate go run ../gen/platform -pkg subprocess -readme ../README.md

// level is how far a capability is supported on this build's platform (see the generated
// zplatform_*.go files and the README's matrix).
type level int

const (
	levelUnsupported level = iota
	levelBestEffort
	levelFull
)
