package sandbox

import (
	"fmt"
	"strings"
)

// Policy says what a confined program may do. Its zero value is the default confinement: the
// working directory and the private temp dir writable, everything else read-only, the
// credential homes of DefaultHidden unreadable, no network, no limits, the first backend that
// works.
type Policy struct {
	// Writable lists the roots the program may write (and read) beneath: directories or
	// files, "~/" expanded against Program.Home, relative ones taken against Program.Dir,
	// symbolic links resolved. Each must exist. nil means Program.Dir and Program.TempDir; an
	// empty non-nil slice means nothing but Program.TempDir, which is always writable when set.
	// Everything outside the writable roots is read-only (or hidden).
	Writable []string
	// Hidden lists paths the program can neither read nor list, in addition to
	// DefaultHidden() unless NoDefaultHidden is set: "~/" expanded against Program.Home,
	// relative ones taken against Program.Dir, symbolic links resolved (the target is hidden).
	// Entries that do not exist are skipped. A writable root beneath a hidden path stays
	// writable.
	Hidden []string
	// NoDefaultHidden leaves DefaultHidden() out: only Hidden is hidden.
	NoDefaultHidden bool
	// AllowUnixSockets lists pathname Unix sockets outside the writable roots the program may
	// connect to ("~/" and relative paths as for Hidden; each must exist and be a socket).
	// By default none is reachable where the backend runs the program in namespaces of its
	// own: /run, /var/run, $XDG_RUNTIME_DIR and /tmp are replaced by private ones,
	// SSH_AUTH_SOCK is not passed, and, with the network off, the namespaces backend checks
	// every connect(2) (the Report says what another backend or the network on leaves
	// reachable).
	AllowUnixSockets []string
	// Protected lists paths inside the writable roots that stay read-only, in addition to
	// DefaultProtected() unless NoDefaultProtected is set: relative ones are taken in each
	// writable root, absolute ones as they are; those that do not exist are skipped. They keep
	// what the program writes from running later, unconfined, when the user works in the same
	// directory (a git hook, an rc file, an editor's task). Enforced where the backend gives the
	// program a mount namespace; the Report says when it cannot. A protected path missing at the
	// start (a .vscode, an .envrc) can be made by the program: only .git/hooks is made, empty,
	// when the repository lacks it.
	Protected []string
	// NoDefaultProtected leaves DefaultProtected() out: only Protected is protected.
	NoDefaultProtected bool
	// Network is NetworkOff (the zero value: no socket but Unix-domain ones), NetworkOn, or
	// NetworkAllowList (only the hosts of Allow, through the kit's proxy).
	Network Network
	// Allow lists the hosts a NetworkAllowList program may reach, as patterns: an exact name
	// ("proxy.golang.org"), a wildcard of subdomains ("*.npmjs.org": names below npmjs.org, not
	// npmjs.org itself), an IP address or CIDR ("10.0.0.5", "10.0.0.0/8", "[::1]"), each with an
	// optional ":PORT" or ":PORT1,PORT2" (none: any port). Loopback, link-local (the cloud
	// metadata endpoint), private and the host's own addresses are reached only when a pattern
	// that is not a wildcard names them. It must be empty with another Network.
	Allow []string
	// Deny lists patterns (as Allow's) refused even when Allow matches.
	Deny []string
	// Limits are resource limits the helper sets before it starts the program; zero fields
	// set nothing.
	Limits Limits
	// Backend is "" (the first backend the probe found working, in the order of
	// Sandbox.Backends) or one backend, which must then work: Prepare never falls back to
	// another one.
	Backend Backend
}

// DefaultHidden returns the paths every Policy hides unless NoDefaultHidden is set: the places
// in the home directory where common tools keep credentials, tokens, keys, browser profiles
// (cookies, saved passwords) and command histories (which hold passwords typed on command
// lines). Each call returns a new slice. Every entry starts with "~/"; one that does not
// exist when the program starts is skipped.
//
// The list follows each tool's own documentation of where it keeps its secrets on Linux:
// ssh and GnuPG; the AWS, Azure (MSAL token cache, "Azure CLI on MSAL") and Google Cloud
// CLIs; kubectl; docker's config.json (registry auths); gh's hosts.yml ("gh auth login"),
// hub, glab's config.yml; git-credential-store(1) (~/.git-credentials and
// $XDG_CONFIG_HOME/git/credentials); .netrc; npmrc(5); .pypirc (twine) and pip's user
// configuration files (index URLs with passwords), current and legacy; cargo-login(1)
// (credentials.toml, legacy credentials); RubyGems' credentials; Vault's token helper
// (~/.vault-token); "terraform login" (credentials.tfrc.json) and its CLI config
// (.terraformrc credentials blocks); SOPS' age keys; libpq's .pgpass; MySQL's .my.cnf and
// mysql_config_editor's .mylogin.cnf; the Firefox (also as a snap) and Chromium-family
// profile directories (Chromium's docs/user_data_dir.md: Chrome, Chromium, Brave, Edge,
// Vivaldi, Opera); the histories of bash, zsh, fish, python, node, psql, mysql, sqlite3,
// redis-cli and irb; and the credential files of AI tools: Claude Code
// (~/.claude/.credentials.json, and ~/.claude.json, which holds an API key when one was
// used to log in), Codex (auth.json), Gemini CLI (oauth_creds.json, mcp-oauth-tokens.json,
// .env), GitHub Copilot (the editors' ~/.config/github-copilot and the CLI's ~/.copilot),
// opencode (auth.json), llm (keys.json) and Hugging Face (token, stored_tokens).
//
// A hidden file reads as empty where the backend runs the program in namespaces of its own
// (it is covered by /dev/null) and fails with EACCES under Landlock alone. Both are harmless
// for the configuration files in the list: npm skips a user config it cannot read (it logs
// it at the verbose level), pip reads its files with Python's configparser, which skips one
// it cannot open, and an empty file is an empty configuration to all of them. A program that
// needs one of these files (a publish step needing ~/.npmrc's token) needs a Policy that
// leaves the defaults out (NoDefaultHidden) and lists in Hidden what it still hides.
func DefaultHidden() []string {
	return []string{
		// keys
		"~/.ssh", "~/.gnupg", "~/.config/sops/age/keys.txt",
		// cloud and containers
		"~/.aws", "~/.azure", "~/.config/gcloud", "~/.kube", "~/.docker/config.json",
		// git hosting and git
		"~/.config/gh/hosts.yml", "~/.config/hub", "~/.config/glab-cli/config.yml",
		"~/.git-credentials", "~/.config/git/credentials", "~/.netrc",
		// package registries
		"~/.npmrc", "~/.pypirc", "~/.config/pip/pip.conf", "~/.pip/pip.conf",
		"~/.cargo/credentials", "~/.cargo/credentials.toml",
		"~/.gem/credentials", "~/.local/share/gem/credentials",
		// infrastructure and secrets
		"~/.vault-token", "~/.terraform.d/credentials.tfrc.json", "~/.terraformrc",
		// databases
		"~/.pgpass", "~/.my.cnf", "~/.mylogin.cnf",
		// browser profiles
		"~/.mozilla", "~/snap/firefox/common/.mozilla",
		"~/.config/google-chrome", "~/.config/google-chrome-beta", "~/.config/google-chrome-unstable",
		"~/.config/chromium", "~/snap/chromium/common/chromium", "~/.config/BraveSoftware",
		"~/.config/microsoft-edge", "~/.config/vivaldi", "~/.config/opera",
		// shell and REPL histories
		"~/.bash_history", "~/.zsh_history", "~/.zhistory", "~/.histfile",
		"~/.local/share/fish/fish_history", "~/.python_history", "~/.node_repl_history",
		"~/.psql_history", "~/.mysql_history", "~/.sqlite_history", "~/.rediscli_history",
		"~/.irb_history",
		// AI tools
		"~/.claude/.credentials.json", "~/.claude.json", "~/.codex/auth.json",
		"~/.gemini/oauth_creds.json", "~/.gemini/mcp-oauth-tokens.json", "~/.gemini/.env",
		"~/.config/github-copilot", "~/.copilot", "~/.local/share/opencode/auth.json",
		"~/.config/io.datasette.llm/keys.json",
		"~/.cache/huggingface/token", "~/.cache/huggingface/stored_tokens", "~/.huggingface/token",
	}
}

// DefaultProtected returns the paths of each writable root that every Policy keeps read-only
// unless NoDefaultProtected is set: what git, shells, direnv, editors and agent tools run or
// load from a directory without asking. The list follows the "dangerous files" of Anthropic's
// sandbox-runtime and the protected .git of codex, narrowed so that a commit still works: the
// hooks and the configuration of a repository (core.hooksPath, core.fsmonitor and filters
// live there), .gitmodules, shell start-up files, .envrc, editor and agent configuration
// directories. Each call returns a new slice.
func DefaultProtected() []string {
	return []string{".git/hooks", ".git/config", ".gitmodules", ".gitconfig", ".envrc",
		".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
		".zshrc", ".zshenv", ".zprofile", ".zlogin", ".ripgreprc",
		".vscode", ".idea", ".mcp.json", ".claude", ".cursor", ".codex", ".gemini"}
}

// Network says whether the program may use the network.
type Network int

const (
	// NetworkOff: no network. socket(2) of any family but AF_UNIX fails with EPERM (seccomp), or,
	// where seccomp cannot be used, the program runs in a network namespace of its own with no
	// interface up. Unix-domain sockets keep working.
	NetworkOff Network = iota
	// NetworkOn: the network of the host, unrestricted.
	NetworkOn
	// NetworkAllowList: the hosts of Policy.Allow (less Policy.Deny) and nothing else. The
	// program runs in a network namespace of its own with only loopback, where the sandbox's
	// init listens on 127.0.0.1:ProxyPort and passes each connection on to the allow-list
	// proxy outside (Program.Proxy): HTTP (CONNECT and plain) and SOCKS5. HTTP_PROXY,
	// HTTPS_PROXY, ALL_PROXY, NO_PROXY (and the lower-case forms, and npm's) point ordinary
	// clients at it; a program that ignores them gets "network unreachable" at once. Needs the
	// namespaces backend.
	NetworkAllowList
)

// ProxyPort is the port of 127.0.0.1, in a NetworkAllowList program's own network namespace,
// where the allow-list proxy is reached.
const ProxyPort = 3128

func (n Network) String() string {
	switch n {
	case NetworkOff:
		return "off"
	case NetworkOn:
		return "on"
	case NetworkAllowList:
		return "allow"
	}
	return fmt.Sprintf("Network(%d)", int(n))
}

// Limits are resource limits (setrlimit(2)), each set as both the soft and the hard limit (so
// the program cannot raise it again) by the helper just before it starts the program. A zero
// field sets nothing. A limit must be below this process's own hard limit (a limit only
// lowers); Prepare refuses one that is not.
type Limits struct {
	// CPUSeconds is RLIMIT_CPU: the program gets SIGXCPU after this many seconds of CPU time
	// and SIGKILL a second later (the hard limit is one second above).
	CPUSeconds uint64
	// FileSizeBytes is RLIMIT_FSIZE: a write that would make a file larger fails and the
	// program gets SIGXFSZ.
	FileSizeBytes uint64
	// OpenFiles is RLIMIT_NOFILE: descriptors at most this number fail with EMFILE.
	OpenFiles uint64
	// Processes is RLIMIT_NPROC: fork fails with EAGAIN once the user has this many
	// processes (threads count). The kernel counts every process of the user's real uid (in
	// the program's user namespace, where the backend makes one), not only the sandbox's,
	// and never enforces it for uid 0: the Report says so when this process is root.
	Processes uint64
	// AddressSpaceBytes is RLIMIT_AS. Set it only when asked for: runtimes that reserve large
	// address spaces up front (the JVM, Go, V8, sanitizers) fail under it.
	AddressSpaceBytes uint64
}

// Backend names a confinement mechanism.
type Backend string

const (
	// Landlock confines the program with Landlock (filesystem; TCP too when the network is
	// off, from ABI 4; signals and abstract Unix sockets, from ABI 6), a seccomp filter, no
	// new privileges and no capabilities, applied by the helper to itself just before it
	// execs the program (same pid). Where seccomp cannot be loaded, the network is cut by a
	// user and network namespace (util-linux unshare(1) in front of the helper).
	Landlock Backend = "landlock"
	// Bubblewrap runs the program under bwrap(1): a read-only bind of /, writable roots bound
	// read-write, hidden paths covered, new user, pid and (network off) network namespaces;
	// inside, the helper adds the seccomp filter, no new privileges and the limits. The
	// program is a child of bwrap (another pid).
	Bubblewrap Backend = "bwrap"
	// Namespaces starts the helper in new user, mount, pid and IPC namespaces (and network,
	// with the network off), where it builds the program's view itself (/ read-only, its own
	// /proc and /dev, private /tmp and /run, the writable roots bound, hidden and protected
	// paths mounted over) and then applies Landlock, the limits, the capability drop and the
	// seccomp filter as the Landlock backend does. The program is a grandchild of the process
	// started (the helper stays as the namespace's init).
	Namespaces Backend = "namespaces"
)

// Report says how one program is confined: which backend enforces the policy, and what it
// could not enforce.
type Report struct {
	Backend Backend
	// Namespaces are the namespaces the program runs in of its own ("user", "mount", "pid",
	// "ipc", "net"), empty when it shares the host's.
	Namespaces []string
	// Network is "off by seccomp", "off by namespace", "off by seccomp and namespace", "on"
	// or "allow-list through the proxy".
	Network string
	// Allow and Deny are the allow-list's patterns (NetworkAllowList).
	Allow, Deny []string
	// NetworkRefused lists the connections the allow-list proxy refused, one line each that
	// starts with HOST:PORT and a space, with a count when more than one ("pypi.org:443 is not
	// in the network allow-list (add --allow pypi.org) (2 times)"); the caller that runs the proxy
	// fills it in once the program has ended (subprocess does).
	NetworkRefused []string
	// Writable are the writable roots as resolved (absolute, links resolved).
	Writable []string
	// Hidden are the hidden paths that exist, as resolved.
	Hidden []string
	// Unenforced lists, one sentence each, what the policy or the kit's baseline (no
	// ptrace, mount, new namespaces, keyrings, bpf) asks for and this backend cannot enforce
	// here. Empty when everything is enforced.
	Unenforced []string
	// Notes lists, one sentence each, what the program may notice beyond the policy: access
	// refused to keep a hidden path hidden, exit statuses reported differently.
	Notes []string
	// SamePid is true when the program runs with the pid of the process that was started
	// (the helper execs it in place); false when it is a child of the backend's own process
	// (bwrap), which then reports a program killed by signal N as exit status 128+N.
	SamePid bool
}

// String is a one-line summary, such as
// "landlock: hidden paths enforced, network off by seccomp".
func (r Report) String() string {
	var b strings.Builder
	b.WriteString(string(r.Backend))
	b.WriteString(": ")
	if len(r.Hidden) > 0 {
		b.WriteString("hidden paths enforced")
	} else {
		b.WriteString("no hidden path exists")
	}
	b.WriteString(", network ")
	b.WriteString(r.Network)
	if !r.SamePid {
		b.WriteString(", the program is a child of " + string(r.Backend))
	}
	if len(r.Unenforced) > 0 {
		b.WriteString("; not enforced: ")
		b.WriteString(strings.Join(r.Unenforced, "; "))
	}
	return b.String()
}
