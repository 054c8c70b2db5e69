package subprocess

//go:generate go run ../gen/platform -pkg subprocess -doc ../docs/platform.md

// level is how far a capability is supported on this build's platform (see the generated
// zplatform_*.go files and the matrix of docs/platform.md).
type level int

const (
	levelUnsupported level = iota
	levelBestEffort
	levelFull
)

func (l level) String() string {
	switch l {
	case levelFull:
		return "yes"
	case levelBestEffort:
		return "best effort"
	}
	return "no"
}

// Support is one capability of the support matrix (docs/platform.md) as this build's platform has it.
type Support struct {
	Capability string // e.g. "terminals"
	Level      string // "yes", "best effort" or "no"
}

// Platform names this build's column of the support matrix and lists its capabilities, for a
// tool's version report.
func Platform() (name string, support []Support) {
	return platformName, []Support{
		{"spawn", capSpawn.String()},
		{"collect", capCollect.String()},
		{"env scrub", capEnvScrub.String()},
		{"terminals", capTerminals.String()},
		{"inspect", capInspect.String()},
		{"lsp", capLSP.String()},
		{"commands", capCommands.String()},
	}
}
