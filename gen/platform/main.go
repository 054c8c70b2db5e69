package main

import (
	"bytes"
	"flag"
	"fmt"
	"go/format"
	"os"
	"path/filepath"
	"strings"
)

// Level is how far a capability is supported on a platform.
type Level int

const (
	Unsupported Level = iota
	BestEffort
	Full
)

// platform is a column of the table: an OS (or family) and the build constraint of its file.
type platform struct {
	name  string // file suffix and matrix column key
	title string
	tag   string // //go:build line, "" when the file name says it
}

var platforms = []platform{
	{"linux", "Linux", ""},
	{"darwin", "macOS", ""},
	{"windows", "Windows", ""},
	{"otherunix", "other Unix", "unix && !linux && !darwin"},
	{"other", "other", "!unix && !windows"},
}

// capability is a row: its constant name, matrix title, level per platform, and notes.
type capability struct {
	constName string
	title     string
	levels    map[string]Level
	note      string
}

func all(l Level) map[string]Level {
	return map[string]Level{"linux": l, "darwin": l, "windows": l, "otherunix": l, "other": l}
}

func with(m map[string]Level, kv ...any) map[string]Level {
	for i := 0; i < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1].(Level)
	}
	return m
}

var table = []capability{
	{"capSpawn", "Spawn detached process trees, Terminate (TERM, grace, KILL), WaitForExit",
		with(all(Full), "darwin", BestEffort, "windows", BestEffort, "otherunix", BestEffort, "other", Unsupported),
		"POSIX: own process group, signals to -pgid. " +
			"macOS (best effort until something runs it on a Mac): the same POSIX code, the leader's exit from a kqueue EVFILT_PROC, members found by sysctl kern.proc reads; compiled and vetted for darwin/amd64 and darwin/arm64, its tests built but not run. " +
			"Windows (best effort until something runs it on real Windows): a job object per tree (started suspended, assigned, resumed; KILL_ON_JOB_CLOSE); Terminate sends CTRL_BREAK_EVENT to the tree's console group where the host has a console, then TerminateJobObject after the grace; WaitForExit counts the job's active processes. Where the job is refused: `taskkill /PID <pid> /T /F` behind a pid + creation-time fence, and only the direct child is watched. " +
			"Runs under Wine 8.0 in CI (`make test-windows`, real processes): the job route, the identity recorded at spawn, Terminate and Timeout of a tree with grandchildren, WaitForExit by job accounting, Close of live trees, start errors (ERROR_BAD_EXE_FORMAT). Windows only (skipped under Wine, which cannot do them): the taskkill route (Wine's taskkill rejects /T) and Ctrl-Break delivery (no console; Wine does not deliver the event to a child). Consoles: a tree shares the host's console when it has one; for a host without one, Windows gives each console program a new console window and Wine gives it none. A windowless console of the tree's own (CREATE_NO_WINDOW) is not used: under Wine it ends with the leader and takes the grandchildren with it (tried, and the job tests of Timeout, WaitForExit and the drain cut failed), and it could not be checked on real Windows. Every route and outcome is also tested on Linux through fakes of the OS calls and of the taskkill runner: assign refused -> taskkill, taskkill success / not found / access denied (exit 128) / missing binary / timeout, identity changed -> no kill, resume failure, Ctrl-Break guards. " +
			"Other Unix: the POSIX code compiles but is not tested."},
	{"capCollect", "Stream dispositions, bounded tails, spill files, offset reads",
		with(all(Full), "darwin", BestEffort, "windows", BestEffort, "otherunix", BestEffort, "other", Unsupported),
		"Portable code; tested on Linux." +
			" Windows: runs under Wine 8.0 in CI with real processes (tails, spill files, offset reads, stdin bytes and pipes, the drain bound with a grandchild holding stdout, and the cut of a pipe held outside the tree, which cancels the blocked read with CancelIoEx since Windows pipes have no read deadline); not run on real Windows." +
			" macOS: compiled, not run."},
	{"capEnvScrub", "Credential-scrubbed env, ResolveExecutable",
		with(all(Full), "darwin", BestEffort, "windows", BestEffort, "other", Unsupported),
		"Windows: case-insensitive names and PATHEXT; a file without an extension is not executable (os/exec would not start it). The Windows rules (merge, scrub, lookup, PATHEXT order, `;` PATH) are unit-tested on every OS, and run under Wine 8.0 in CI with real children (the scrub and merge as the child sees them, PATHEXT order, a .cmd run through cmd.exe); not run on real Windows." +
			" macOS: the POSIX rules, tested on Linux; compiled, not run on a Mac."},
	{"capTerminals", "Terminals (pty), foreground groups",
		with(all(Unsupported), "linux", Full, "darwin", BestEffort, "otherunix", BestEffort),
		"creack/pty; UTF-8 bridged output with offset reads; identity-fenced cleanup of the session (Linux: session enumeration and cookies; macOS: identities seen by foreground inspections and the session). Tested on Linux. Windows: unsupported (no ConPTY backend; Wine 8.0, where CI could test one, creates a pseudo console, but a child's standard handles do not reach it, only writes to CON do, and ResizePseudoConsole is not implemented)." +
			" macOS keeps the pty master blocking (under kqueue a non-blocking master makes reads spin, creack/pty #174): a read holds a thread, and one that a process outside the cleanup keeps open outlasts Close; compiled and vetted, its tests not run on a Mac."},
	{"capInspect", "Process inspection (procinspect)",
		with(all(Unsupported), "linux", Full, "darwin", BestEffort, "windows", BestEffort),
		"Linux reads /proc; " +
			"macOS makes one sysctl kern.proc read per snapshot, lookup or identity check (start token: p_starttime in microseconds) and reads sessions with getsid(2); the kinfo_proc decoder is tested on Linux with byte-level fixtures laid out as x/sys's KinfoProc, which the darwin build checks at compile time; nothing of it has run on a Mac. " +
			"Windows (best effort until something runs it on real Windows): one Toolhelp32 walk per snapshot or lookup (pid, creator's pid, executable name) and one open per process for its creation FILETIME (GetProcessTimes), the start token; a process that cannot be opened keeps start 0, is never the child of one that could be, and fails an identity check with a permission error; no process groups, sessions or terminals (0), no Environ. `subkit tree` and MCP's `process_tree` work there. Runs under Wine 8.0 in CI with real processes: a tree of children, grandchildren and cmd.exe (pid, parent, name, creation times stable across snapshots and equal to Lookup's and GetProcessTimes', Descendants, Alive before and after the tree ends, an exited process still held by a handle), `subkit.exe tree PID` of such a tree, and `subkit.exe mcp` answering `process_tree` over stdio. Windows only (skipped under Wine, where every process can be opened): the start-0 identity check. Wine 8.0 does not list an exited process that a handle still holds; Windows may list it with no threads (reported as a zombie)."},
	{"capLSP", "Language servers (lsp)",
		with(all(Full), "darwin", BestEffort, "windows", BestEffort, "otherunix", BestEffort, "other", Unsupported),
		"Portable code over the Service. Linux: gopls, pyright, typescript-language-server, clangd and a fake server in `make test`. " +
			"Windows (best effort until something runs it on real Windows): the whole lsp package runs under Wine 8.0 in CI with the fake server and a cross-built gopls.exe (given a cross-built Windows Go toolchain for its go list): launch, initialize, document sync, diagnostics of a type error, shutdown and the tree gone after it; URIs of drive letters (upper-cased both ways) and UNC paths, and a server's other spelling of a URI (vscode-uri's %3A, lower-case drive) filed under the open document's; subkit.exe mcp's lsp_diagnostics with gopls.exe. The npm servers and clangd are not run under Wine. " +
			"macOS: compiled, not run."},
	{"capCommands", "Command tool (bash executor, `subkit bash`, MCP `bash`)",
		with(all(Full), "darwin", BestEffort, "windows", BestEffort, "otherunix", BestEffort, "other", Unsupported),
		"POSIX: bash from PATH (or `Config.Shell`). " +
			"Windows (best effort until something runs it on real Windows): Git Bash where Git for Windows installed it (its registry key, next to git.exe on PATH, Program Files, the user's programs; never System32's bash.exe, WSL's), else the kit's own shell (`bash.KitShell`, `Service.Shell`: mvdan.cc/sh's interpreter of bash's syntax in the kit's helper, with bash's builtins but no utilities of its own; the programs it runs come from PATH and are children in the tree's job object). " +
			"Under Wine 8.0 in CI (no Git for Windows there): the kit's shell (status, output, the model environment, a timeout that ends ping.exe below it, background reads), `subkit.exe bash` and `subkit.exe mcp`'s `bash` tool; finding Git Bash is unit-tested with fakes of the file system. macOS: compiled, not run."},
}

func main() {
	pkg := flag.String("pkg", "", "Go package name of the generated files")
	doc := flag.String("doc", "", "Markdown file to update between the markers")
	flag.Parse()
	if *pkg == "" || *doc == "" {
		fmt.Fprintln(os.Stderr, "usage: platform -pkg NAME -doc PATH")
		os.Exit(2)
	}
	for _, p := range platforms {
		src, err := goFile(*pkg, p)
		if err != nil {
			fail(err)
		}
		if err := os.WriteFile(filepath.Join(".", "zplatform_"+p.name+".go"), src, 0o644); err != nil {
			fail(err)
		}
	}
	if err := updateDoc(*doc); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "platform:", err)
	os.Exit(1)
}

func goFile(pkg string, p platform) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "// Code generated by gen/platform from its support table; DO NOT EDIT.\n\n")
	if p.tag != "" {
		fmt.Fprintf(&b, "//go:build %s\n\n", p.tag)
	}
	fmt.Fprintf(&b, "package %s\n\n", pkg)
	fmt.Fprintf(&b, "// platformName is the column of the support table this build uses.\nconst platformName = %q\n\n", p.title)
	fmt.Fprintf(&b, "const (\n")
	for _, c := range table {
		fmt.Fprintf(&b, "\t%s = %s // %s\n", c.constName, levelConst(c.levels[p.name]), c.title)
	}
	fmt.Fprintf(&b, ")\n")
	return format.Source(b.Bytes())
}

func levelConst(l Level) string {
	return [...]string{"levelUnsupported", "levelBestEffort", "levelFull"}[l]
}

func levelText(l Level) string {
	return [...]string{"no", "best effort", "yes"}[l]
}

const (
	beginMark = "<!-- BEGIN PLATFORM MATRIX (go generate) -->"
	endMark   = "<!-- END PLATFORM MATRIX -->"
)

func updateDoc(path string) error {
	old, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	s := string(old)
	i, j := strings.Index(s, beginMark), strings.Index(s, endMark)
	if i < 0 || j < i {
		return fmt.Errorf("%s: markers %q and %q not found in order", path, beginMark, endMark)
	}
	var b strings.Builder
	b.WriteString(beginMark + "\n")
	b.WriteString("| capability |")
	for _, p := range platforms {
		b.WriteString(" " + p.title + " |")
	}
	b.WriteString(" notes |\n|---|")
	for range platforms {
		b.WriteString("---|")
	}
	b.WriteString("---|\n")
	for _, c := range table {
		b.WriteString("| " + c.title + " |")
		for _, p := range platforms {
			b.WriteString(" " + levelText(c.levels[p.name]) + " |")
		}
		b.WriteString(" " + c.note + " |\n")
	}
	out := s[:i] + b.String() + s[j:]
	if out == s {
		return nil
	}
	return os.WriteFile(path, []byte(out), 0o644)
}
