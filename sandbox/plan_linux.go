package sandbox

import (
	"encoding/json"
	"fmt"
)

// planVersion is the version of the plan's format; Main refuses any other (a helper binary
// older or newer than the host).
const planVersion = 1

// The routes of a plan: how the helper was reached and what it applies itself.
const (
	routeLandlock = "landlock"    // Landlock + seccomp, applied by the helper
	routeNS       = "landlock-ns" // Landlock, the network cut by the user+network namespace unshare(1) made
	routeBwrap    = "bwrap"       // bwrap made the mounts and namespaces; the helper adds seccomp and limits
	routeNSInit   = "namespaces"  // the helper is the init of new namespaces: it builds the mounts, then starts stageConfine
)

// The stages of the namespaces route: the init (the process started), then the helper again,
// which confines itself as the Landlock route does and execs the program.
const (
	stageInit    = ""
	stageConfine = "confine"
)

// plan is what Prepare tells Main, in PlanVar.
type plan struct {
	V          int          `json:"v"`
	Route      string       `json:"route"`
	Path       string       `json:"path"` // the program; its argv is the helper's os.Args[1:]
	Dir        string       `json:"dir"`
	ABI        int          `json:"abi,omitempty"` // the Landlock ABI the Report assumed: Main refuses a lower one
	Writable   []string     `json:"writable,omitempty"`
	Hidden     []pathEntry  `json:"hidden,omitempty"`
	Absent     []string     `json:"absent,omitempty"` // hidden paths missing at the start: Landlock keeps them out should they appear
	NetworkOff bool         `json:"network_off,omitempty"`
	Seccomp    bool         `json:"seccomp,omitempty"`
	Limits     Limits       `json:"limits"`
	Mounts     []mountOp    `json:"mounts,omitempty"`   // namespaces route: the program's view, built by the init
	Stage      string       `json:"stage,omitempty"`    // namespaces route: stageInit or stageConfine
	Terminal   bool         `json:"terminal,omitempty"` // the program keeps stdin as its controlling terminal
	PidMax     int          `json:"pid_max,omitempty"`  // namespaces route: kernel.pid_max of the new pid namespace
	Gate       bool         `json:"gate,omitempty"`     // namespaces route, network off: connect(2) goes through the init's connectGate
	Sockets    []string     `json:"sockets,omitempty"`  // the gate: sockets allowed by name (Policy.AllowUnixSockets)
	Proxy      string       `json:"proxy,omitempty"`    // namespaces route, allow-list: the proxy's Unix socket, which the init forwards 127.0.0.1:ProxyPort to
	Probe      *probeChecks `json:"probe,omitempty"`    // the probe's checks, run after confinement and before the exec
	Stage2     bool         `json:"stage2,omitempty"`   // the probe's second stage: report and exit
}

// pathEntry is one path of a Policy as resolved (a hidden or a protected one), and whether it
// is a directory.
type pathEntry struct {
	Path string `json:"path"`
	Dir  bool   `json:"dir,omitempty"`
	Link bool   `json:"link,omitempty"` // a symbolic link, itself
}

// probeChecks are what the probe's helper checks from inside the confinement.
type probeChecks struct {
	Inside  string `json:"inside"`             // a file to create in a writable root: must work
	Outside string `json:"outside"`            // a file to create outside: must fail
	Secret  string `json:"secret"`             // a file in a hidden directory: must not be readable
	HostNet string `json:"host_net,omitempty"` // the host's network namespace (/proc/self/ns/net), which a namespace route must have left
}

func (p *plan) encode() (string, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return "", fmt.Errorf("encoding the plan: %w", err)
	}
	return string(b), nil
}

func decodePlan(s string) (*plan, error) {
	if s == "" {
		return nil, fmt.Errorf("no plan in %s", PlanVar)
	}
	var p plan
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return nil, fmt.Errorf("decoding the plan in %s: %w", PlanVar, err)
	}
	if p.V != planVersion {
		return nil, fmt.Errorf("plan version %d, this helper reads version %d (the helper binary and the host differ)", p.V, planVersion)
	}
	return &p, nil
}
