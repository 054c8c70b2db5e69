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
	allow, deny     stringList
}

func (f *sandboxFlags) register(fs *flag.FlagSet) {
	fs.BoolVar(&f.on, "sandbox", false, "confine the command: only the working directory, a private TMPDIR and --writable dirs writable, the usual credential stores (keys, tokens, browser profiles, shell histories) hidden, no network (Linux)")
	fs.Var(&f.writable, "writable", "with --sandbox: a directory the command may write in, instead of the working directory (repeatable)")
	fs.Var(&f.hidden, "hidden", "with --sandbox: a path the command may not read, in addition to the credential stores (repeatable)")
	fs.BoolVar(&f.noDefaultHidden, "no-default-hidden", false, "with --sandbox: leave the credential stores readable; only --hidden paths are hidden")
	fs.Var(&f.sockets, "allow-unix-socket", "with --sandbox: a Unix socket outside the writable dirs the command may connect to, such as an ssh agent's (repeatable)")
	fs.Var(&f.protected, "protected", "with --sandbox: a path of the writable dirs kept read-only, in addition to .git/hooks, .git/config, rc files, .vscode and the like (repeatable)")
	fs.BoolVar(&f.noDefaultProt, "no-default-protected", false, "with --sandbox: leave .git/hooks, rc files and the like writable; only --protected paths are read-only")
	fs.StringVar(&f.network, "network", "off", "with --sandbox: on, off, or allow (only the --allow hosts, through a proxy; Linux, the namespaces backend)")
	fs.Var(&f.allow, "allow", "with --network allow: a host the command may reach: example.com, *.example.com (its subdomains), 10.0.0.0/8, each with an optional :PORT (repeatable)")
	fs.Var(&f.deny, "deny", "with --network allow: a host refused even when --allow matches it (repeatable)")
}

// policy is the policy the flags ask for, or nil without --sandbox.
func (f *sandboxFlags) policy(fs *flag.FlagSet) (*sandbox.Policy, error) {
	if !f.on {
		for _, name := range []string{"writable", "hidden", "no-default-hidden", "allow-unix-socket", "protected", "no-default-protected", "network", "allow", "deny"} {
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
	case "allow":
		if len(f.allow) == 0 {
			return nil, errors.New("--network allow needs at least one --allow HOST")
		}
		p.Network, p.Allow, p.Deny = sandbox.NetworkAllowList, f.allow, f.deny
	default:
		return nil, fmt.Errorf("--network %q: want on, off or allow", f.network)
	}
	if f.network != "allow" && (len(f.allow) > 0 || len(f.deny) > 0) {
		return nil, errors.New("--allow and --deny apply with --network allow only")
	}
	return p, nil
}

func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// sandboxOutput is the "sandbox" object of --json and of subkit mcp's answers: which backend
// enforced, and what it could not.
type sandboxOutput struct {
	Backend        string   `json:"backend" jsonschema:"the backend that enforced the policy: namespaces, landlock or bwrap"`
	Network        string   `json:"network" jsonschema:"off, on, or allow (only the allow-listed hosts, through the sandbox's proxy)"`
	How            string   `json:"how" jsonschema:"what enforced each part, in words"`
	Writable       []string `json:"writable" jsonschema:"the writable roots"`
	Hidden         []string `json:"hidden" jsonschema:"the hidden paths that exist"`
	Allow          []string `json:"allow,omitempty" jsonschema:"network allow: the host patterns allowed"`
	Deny           []string `json:"deny,omitempty" jsonschema:"network allow: the host patterns refused"`
	NetworkRefused []string `json:"network_refused,omitempty" jsonschema:"network allow: the connections the proxy refused, a line each (host:port and why, N times); add a host with --allow HOST"`
	Unenforced     []string `json:"unenforced" jsonschema:"parts of the policy this machine could not enforce"`
}

func sandboxJSON(r *sandbox.Report) *sandboxOutput {
	if r == nil {
		return nil
	}
	network := "off"
	switch {
	case r.Network == "on":
		network = "on"
	case len(r.Allow) > 0:
		network = "allow"
	}
	out := &sandboxOutput{Backend: string(r.Backend), Network: network, How: r.String(),
		Writable: r.Writable, Hidden: r.Hidden, Allow: r.Allow, Deny: r.Deny, NetworkRefused: r.NetworkRefused, Unenforced: r.Unenforced}
	for _, s := range []*[]string{&out.Writable, &out.Hidden, &out.Unenforced} {
		if *s == nil {
			*s = []string{} // a list in the JSON, never null
		}
	}
	return out
}

// isUnsupported says that err is a missing capability (no sandbox backend here, say).
func isUnsupported(err error) bool { return errors.Is(err, errors.ErrUnsupported) }
