package main

import (
	"errors"
	"flag"
	"fmt"

	"github.com/subkit/subkit/sandbox"
)

// sandboxFlags are the confinement flags of exec, bash, shell, code and mcp.
type sandboxFlags struct {
	on              bool
	writable        stringList
	hidden          stringList
	noDefaultHidden bool
	sockets         stringList
	protected       stringList
	noDefaultProt   bool
	network         string
}

func (f *sandboxFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.on, "sandbox", false, "confine the command: only the working directory, a private TMPDIR and --writable dirs writable, the usual credential stores (keys, tokens, browser profiles, shell histories) hidden, no network (Linux)")
	fs.Var(&f.writable, "writable", "with --sandbox: a directory the command may write in, instead of the working directory (repeatable)")
	fs.Var(&f.hidden, "hidden", "with --sandbox: a path the command may not read, in addition to the credential stores (repeatable)")
	fs.BoolVar(&f.noDefaultHidden, "no-default-hidden", false, "with --sandbox: leave the credential stores readable; only --hidden paths are hidden")
	fs.Var(&f.sockets, "allow-unix-socket", "with --sandbox: a Unix socket outside the writable dirs the command may connect to, such as an ssh agent's (repeatable)")
	fs.Var(&f.protected, "protected", "with --sandbox: a path of the writable dirs kept read-only, in addition to .git/hooks, .git/config, rc files, .vscode and the like (repeatable)")
	fs.BoolVar(&f.noDefaultProt, "no-default-protected", false, "with --sandbox: leave .git/hooks, rc files and the like writable; only --protected paths are read-only")
	fs.StringVar(&f.network, "network", "off", "with --sandbox: on or off")
}

// policy is the policy the flags ask for, or nil without --sandbox.
func (f *sandboxFlags) policy(fs *flag.FlagSet) (*sandbox.Policy, error) {
	if !f.on {
		for _, name := range []string{"writable", "hidden", "no-default-hidden", "allow-unix-socket", "protected", "no-default-protected", "network"} {
			if flagSet(fs, name) {
				return nil, fmt.Errorf("--%s applies with --sandbox only", name)
			}
		}
		return nil, nil
	}
	p := &sandbox.Policy{Writable: f.writable, Hidden: f.hidden, NoDefaultHidden: f.noDefaultHidden, AllowUnixSockets: f.sockets,
		Protected: f.protected, NoDefaultProtected: f.noDefaultProt}
	switch f.network {
	case "off":
	case "on":
		p.Network = sandbox.NetworkOn
	default:
		return nil, fmt.Errorf("--network %q: want on or off", f.network)
	}
	return p, nil
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// sandboxOutput is the "sandbox" object of --json: which backend enforced, and what it could
// not.
type sandboxOutput struct {
	Backend    string   `json:"backend"`
	Network    string   `json:"network"` // "off" or "on"
	How        string   `json:"how"`     // the report in words: what enforced each part
	Writable   []string `json:"writable"`
	Hidden     []string `json:"hidden"`
	Unenforced []string `json:"unenforced"`
}

func sandboxJSON(r *sandbox.Report) *sandboxOutput {
	if r == nil {
		return nil
	}
	network := "off"
	if r.Network == "on" {
		network = "on"
	}
	out := &sandboxOutput{Backend: string(r.Backend), Network: network, How: r.String(),
		Writable: r.Writable, Hidden: r.Hidden, Unenforced: r.Unenforced}
	for _, s := range []*[]string{&out.Writable, &out.Hidden, &out.Unenforced} {
		if *s == nil {
			*s = []string{} // a list in the JSON, never null
		}
	}
	return out
}

// isUnsupported says that err is a missing capability (no sandbox backend here, say).
func isUnsupported(err error) bool { return errors.Is(err, errors.ErrUnsupported) }
