package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/subkit/subkit/lsp"
	"github.com/subkit/subkit/subprocess"
)

const lspUsage = `usage: subkit lsp [--root DIR] [--open FILE]... [--edit FILE=NEWTEXTFILE]... [--hover FILE:LINE:COL]
                  [--definition PLACE] [--references PLACE] [--symbols FILE] [--rename PLACE=NEWNAME]
                  [--wait DUR] [--settle DUR] [--settings JSON] [--timeout DUR] [--grace DUR]
                  [--shutdown-timeout DUR] [--exit-timeout DUR] [--json] -- SERVER [ARGS...]

Launches SERVER as a language server over stdio, in a process tree of its own with the root as
its working directory, stdin/stdout piped and stderr kept as a bounded tail. It runs the
initialize handshake, opens each --open file (and the --hover file) as version 1, waits for the
diagnostics of each, asks for the hover, then for --definition, --references, --symbols and
--rename (each once the server is ready for the file: it has diagnosed it and ended its
work-done progress; a PLACE is FILE:LINE:COL or FILE#SYMBOL, the file's symbol of that name or
its first use as a word; --rename writes the server's edit to disk, checked whole first), then
applies each --edit in order (FILE's whole text
becomes NEWTEXTFILE's, as the next version of FILE, which is opened first if no --open named it)
and waits for the diagnostics of that version. Then it shuts the server down: shutdown (whose
answer it awaits up to --shutdown-timeout), exit, end of stdin, up to --exit-timeout (10s) for a
server that answered shutdown to leave and the grace for the rest of its tree, then SIGTERM and
SIGKILL to whatever is left of it. A server that never answers takes --shutdown-timeout + 2 x
--grace to end. A server that leaves after exit with status 0 has ended cleanly, even when it
left a message unfinished on its stdout.

The diagnostics of a version are the server's first set for that version or a later one, never
an older one (pulled with textDocument/diagnostic when the server offers it, else published),
once no diagnostics have been published for --settle; --wait (60s) bounds each wait, and a wait
that runs out is an error (kind diagnostics_timeout, exit status 124), never an empty list. LINE and COL
start at 1 and COL counts bytes, as compilers print positions. --settings is a JSON object
that answers workspace/configuration by section, e.g. '{"gopls":{"staticcheck":true}}'; a known
server (gopls, pyright-langserver, typescript-language-server, clangd, bash-language-server,
yaml-language-server, pylsp) gets its preset's settings, initialization options and position
encodings where the flags give none (lsp.Preset).
--timeout bounds the whole session before the shutdown.

With --json it prints one JSON object:
  {"server_info":{"name","version"},"capabilities":{...},"position_encoding":"utf-16",
   "diagnostic_sets":[{"after":"open"|"edit","uri","version","versioned","diagnostics":[...]}],
   "diagnostics":[{"uri","range","severity","message",...}],"hover":{"contents","range"}|null,
   "definition":[{"path","line","column","end_line","end_column","text"}],"references":[...],
   "symbols":[{"name","kind","detail","location","depth","container"}],"rename":{"files","edits"},
   "shutdown":"clean"|"terminated"|"killed"|"crashed","shutdown_error":"...",
   "stderr_tail":"...","stderr":{"tail","total_bytes","truncated","spill_path"}}
where "diagnostic_sets" has one entry per version waited for (a wait that ran out adds none),
"diagnostics" is the last set of every file the server reported on, ranges count characters
in "position_encoding", and "shutdown_error" (when set) says why the polite shutdown failed;
"error":{"kind","message"} is added when a step failed. Without --json it prints each set as
FILE:LINE:COL: SEVERITY: MESSAGE lines under a "FILE: version N (after open): K diagnostics"
line, the hover text and how the server ended; the stderr tail goes to stderr when the server
did not end cleanly.

Exit status: 0 when every step worked (diagnostics do not change it); 124 when a diagnostics
wait ran out (kind diagnostics_timeout: the server did not answer that version within --wait);
1 when a step failed (error kind failed, timeout, server_exited or protocol), or the server had
to be terminated or killed at shutdown (kind shutdown); otherwise as the table below.

flags:
`

type lspOutput struct {
	ServerInfo       *lsp.ServerInfo `json:"server_info"`
	Capabilities     json.RawMessage `json:"capabilities"`
	PositionEncoding string          `json:"position_encoding,omitempty"`
	DiagnosticSets   []lspSet        `json:"diagnostic_sets"`
	Diagnostics      []lspDiagnostic `json:"diagnostics"`
	Hover            *lsp.Hover      `json:"hover"`
	Definition       []locationOut   `json:"definition,omitempty"`
	References       []locationOut   `json:"references,omitempty"`
	Symbols          []symbolOut     `json:"symbols,omitempty"`
	Rename           *lspRenameOut   `json:"rename,omitempty"`
	Shutdown         string          `json:"shutdown"`
	ShutdownError    string          `json:"shutdown_error,omitempty"`
	StderrTail       string          `json:"stderr_tail"`
	Stderr           *streamOut      `json:"stderr,omitempty"`
	Error            *lspError       `json:"error,omitempty"`
	Cancelled        bool            `json:"cancelled"` // interrupted (Ctrl-C, SIGTERM, SIGHUP)
	escaped          int             // processes outside the server's group that Shutdown ended
	enc              lsp.PositionEncoding
}

// lspSet is the diagnostics of one version of a file, after its open or an edit.
type lspSet struct {
	After string `json:"after"`
	lsp.DiagnosticSet
	text []byte // of the version, for byte columns
}

type lspDiagnostic struct {
	URI string `json:"uri"`
	lsp.Diagnostic
}

type lspError struct {
	Kind    string `json:"kind"`
	Message string `json:"message"`
}

// lspHoverAt is a parsed --hover FILE:LINE:COL.
type lspHoverAt struct {
	file      string
	line, col int
}

func parseHoverAt(s string) (lspHoverAt, error) {
	i := strings.LastIndexByte(s, ':')
	j := -1
	if i > 0 {
		j = strings.LastIndexByte(s[:i], ':')
	}
	if j <= 0 {
		return lspHoverAt{}, fmt.Errorf("--hover %q: want FILE:LINE:COL", s)
	}
	line, err1 := strconv.Atoi(s[j+1 : i])
	col, err2 := strconv.Atoi(s[i+1:])
	if err1 != nil || err2 != nil || line < 1 || col < 1 {
		return lspHoverAt{}, fmt.Errorf("--hover %q: LINE and COL must be numbers from 1", s)
	}
	return lspHoverAt{file: s[:j], line: line, col: col}, nil
}

// lspEdit is a parsed --edit FILE=NEWTEXTFILE.
type lspEdit struct{ file, newText string }

func parseEdit(s string) (lspEdit, error) {
	file, newText, ok := strings.Cut(s, "=")
	if !ok || file == "" || newText == "" {
		return lspEdit{}, fmt.Errorf("--edit %q: want FILE=NEWTEXTFILE", s)
	}
	return lspEdit{file: file, newText: newText}, nil
}

// cmdLsp is `subkit lsp`.
func cmdLsp(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lsp", flag.ContinueOnError)
	var (
		root      = fs.String("root", ".", "workspace root: the server's working directory and rootUri")
		opens     stringList
		editArgs  stringList
		hoverArg  = fs.String("hover", "", "FILE:LINE:COL to ask a hover for (the file is opened)")
		wait      = fs.Duration("wait", lspDefaultWait, "longest wait for the diagnostics of one version (a cold tsserver under load takes 10-15s)")
		settle    = fs.Duration("settle", 500*time.Millisecond, "diagnostics are taken once none has been published for this long")
		settings  = fs.String("settings", "", "JSON object answering workspace/configuration by section")
		timeout   = fs.Duration("timeout", 2*time.Minute, "bound of the whole session before the shutdown")
		grace     = fs.Duration("grace", subprocess.DefaultGrace, "wait for the server to exit, and between SIGTERM and SIGKILL")
		shutAfter = fs.Duration("shutdown-timeout", lsp.DefaultShutdownTimeout, "longest wait for the answer to the shutdown request")
		exitAfter = fs.Duration("exit-timeout", lsp.DefaultExitTimeout, "longest wait for a server that answered shutdown to leave after exit")
		asJSON    = fs.Bool("json", false, "print one JSON object")
	)
	fs.Var(&opens, "open", "file to open with textDocument/didOpen (repeatable)")
	var defArg, refArg, symArg, renameArg string
	fs.StringVar(&defArg, "definition", "", "FILE:LINE:COL or FILE#SYMBOL: where that symbol is defined")
	fs.StringVar(&refArg, "references", "", "FILE:LINE:COL or FILE#SYMBOL: every reference to that symbol, its declaration included")
	fs.StringVar(&symArg, "symbols", "", "FILE: the file's symbols")
	fs.StringVar(&renameArg, "rename", "", "FILE:LINE:COL=NEWNAME or FILE#SYMBOL=NEWNAME: rename that symbol everywhere, written to disk")
	fs.Var(&editArgs, "edit", "FILE=NEWTEXTFILE: replace FILE's text with NEWTEXTFILE's, as its next version (repeatable, in order)")
	fail := func(kind string, code int, err error) int {
		if *asJSON {
			writeJSON(stdout, struct {
				Error lspError `json:"error"`
			}{lspError{kind, err.Error()}})
		} else {
			fmt.Fprintf(stderr, "subkit: %v\n", err)
			if code == exitUsage {
				fmt.Fprintln(stderr, `run "subkit lsp -h" for usage`)
			}
		}
		return code
	}
	if help, err := parseFlags(fs, args, lspUsage, stdout); help {
		return 0
	} else if err != nil {
		return fail("invalid", exitUsage, err)
	}
	var hoverAt *lspHoverAt
	if *hoverArg != "" {
		h, err := parseHoverAt(*hoverArg)
		if err != nil {
			return fail("invalid", exitUsage, err)
		}
		hoverAt = &h
	}
	var edits []lspEdit
	for _, a := range editArgs {
		e, err := parseEdit(a)
		if err != nil {
			return fail("invalid", exitUsage, err)
		}
		edits = append(edits, e)
	}
	var cfgSettings map[string]any
	if *settings != "" {
		if err := json.Unmarshal([]byte(*settings), &cfgSettings); err != nil {
			var typeErr *json.UnmarshalTypeError
			if errors.As(err, &typeErr) { // the decoder's words name a Go type
				return fail("invalid", exitUsage, fmt.Errorf("--settings: want a JSON object, not a JSON %s", typeErr.Value))
			}
			return fail("invalid", exitUsage, fmt.Errorf("--settings: want a JSON object: %w", err))
		}
		if cfgSettings == nil {
			return fail("invalid", exitUsage, errors.New("--settings: want a JSON object, not null"))
		}
	}
	switch {
	case fs.NArg() == 0:
		return fail("invalid", exitUsage, errors.New("no server given: subkit lsp [flags] -- SERVER [ARGS...]"))
	case *wait <= 0 || *timeout <= 0 || *grace <= 0 || *settle <= 0 || *shutAfter <= 0 || *exitAfter <= 0:
		return fail("invalid", exitUsage, errors.New("--wait, --timeout, --grace, --settle, --shutdown-timeout and --exit-timeout must be positive"))
	}

	svc, err := subprocess.New(serviceConfig())
	if err != nil {
		kind, code := startFailure(err)
		return fail(kind, code, err)
	}
	defer svc.Close()
	defer hurried(ctx, svc.Hurry)()

	session, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	c, err := lsp.Start(session, svc, lsp.WithPreset(lsp.Config{
		Path: fs.Arg(0), Args: fs.Args()[1:], Root: *root, Settings: cfgSettings, Grace: *grace,
		ShutdownTimeout: *shutAfter, ExitTimeout: *exitAfter,
	}))
	if err != nil {
		if kind, code := startFailure(err); kind != "internal" {
			return fail(kind, code, err)
		}
		out := lspOutput{DiagnosticSets: []lspSet{}, Diagnostics: []lspDiagnostic{}, Error: lspFailure(ctx, err)}
		var exit *lsp.ServerExitError
		if errors.As(err, &exit) {
			out.Shutdown = lsp.EndedCrashed.String()
			if exit.Cause != nil {
				out.Shutdown = lsp.EndedTerminated.String()
			}
			st := streamOf(subprocess.StreamResult{Tail: exit.Stderr, Truncated: exit.StderrTruncated, TotalBytes: int64(len(exit.Stderr))})
			out.StderrTail, out.Stderr = st.Tail, &st
		}
		return printLsp(stdout, stderr, *asJSON, out, nil)
	}
	defer c.Close()

	out := lspOutput{ServerInfo: c.InitializeResult().ServerInfo, Capabilities: c.InitializeResult().Capabilities,
		PositionEncoding: string(c.PositionEncoding()), DiagnosticSets: []lspSet{}, enc: c.PositionEncoding()}
	texts := map[string][]byte{} // by URI, for positions
	var stepErr error
	open := func(file string) (uri string, version int, err error) {
		path, err := filepath.Abs(file)
		if err != nil {
			return "", 0, err
		}
		uri = lsp.FileURI(path)
		if d, ok := c.Document(uri); ok {
			return uri, d.Version, nil
		}
		text, err := lsp.ReadDocument(path, 0) // a regular file only: no link, no FIFO
		if err != nil {
			return "", 0, err
		}
		texts[uri] = text
		version, err = c.Open(session, uri, lsp.LanguageID(path), string(text))
		return uri, version, err
	}
	// diagnose waits for the diagnostics of version of each URI, then for quiet, and records
	// the settled set of each.
	//
	// A wait that runs out is a failed step (error kind diagnostics_timeout, exit status 124):
	// no diagnostics is not the same as a clean file.
	diagnose := func(after string, uris []string, versions []int) error {
		wctx, cancel := context.WithTimeout(session, *wait)
		defer cancel()
		got := make([]bool, len(uris))
		var waitErr error
		for i, u := range uris {
			if _, err := c.Diagnostics(wctx, u, versions[i]); err != nil {
				if session.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
					err = &lspWaitError{file: lspFile(u), version: versions[i], wait: *wait}
				}
				waitErr = err
				break
			}
			got[i] = true
		}
		c.WaitQuiet(wctx, *settle) // ended by --wait at worst; the sets are kept either way
		for i, u := range uris {
			if set, err := c.Diagnostics(session, u, 0, lsp.NoWait); got[i] && err == nil && set.Version >= versions[i] {
				out.DiagnosticSets = append(out.DiagnosticSets, lspSet{After: after, DiagnosticSet: set, text: texts[u]})
			}
		}
		return waitErr
	}
	var opened []string
	var versions []int
	files := slices.Clone([]string(opens))
	if hoverAt != nil {
		files = append(files, hoverAt.file)
	}
	for _, f := range files {
		uri, v, err := open(f)
		if err != nil {
			stepErr = fmt.Errorf("open %s: %w", f, err)
			break
		}
		if !slices.Contains(opened, uri) {
			opened, versions = append(opened, uri), append(versions, v)
		}
	}
	if stepErr == nil && len(opened) > 0 {
		stepErr = diagnose("open", opened, versions)
	}
	if stepErr == nil && hoverAt != nil {
		path, _ := filepath.Abs(hoverAt.file)
		uri := lsp.FileURI(path)
		pos, err := lsp.PositionIn(texts[uri], hoverAt.line, hoverAt.col, c.PositionEncoding())
		if err == nil {
			out.Hover, err = c.Hover(session, uri, pos)
		}
		if err != nil {
			stepErr = fmt.Errorf("hover %s: %w", *hoverArg, err)
		}
	}
	if stepErr == nil {
		stepErr = lspNavigate(session, c, &out, lspNavArgs{definition: defArg, references: refArg, symbols: symArg, rename: renameArg, wait: *wait}, open)
	}
	for _, e := range edits {
		if stepErr != nil {
			break
		}
		text, err := os.ReadFile(e.newText)
		if err != nil {
			stepErr = fmt.Errorf("edit %s: %w", e.file, err)
			break
		}
		uri, _, err := open(e.file)
		if err == nil {
			var v int
			if v, err = c.Change(session, uri, lsp.TextChange{Text: string(text)}); err == nil {
				texts[uri] = text
				stepErr = diagnose("edit", []string{uri}, []int{v})
			}
		}
		if err != nil {
			stepErr = fmt.Errorf("edit %s: %w", e.file, err)
		}
	}

	// Before the shutdown: servers clear their diagnostics when their session ends.
	out.Diagnostics = lspDiagnostics(c.AllDiagnostics())

	// Shut down with a context of its own: an interrupt must still end the server.
	shutCtx, cancelShut := context.WithTimeout(context.Background(), *shutAfter+*exitAfter+4*(*grace)+15*time.Second)
	defer cancelShut()
	exit, shutErr := c.Shutdown(shutCtx)
	out.Shutdown, out.escaped = exit.Ended.String(), exit.Escaped
	st := streamOf(exit.Stderr)
	out.StderrTail, out.Stderr = st.Tail, &st
	if exit.ShutdownErr != nil {
		out.ShutdownError = exit.ShutdownErr.Error()
	}
	if stepErr == nil && exit.Ended == lsp.EndedCrashed {
		stepErr = c.Err()
	}
	if stepErr == nil {
		stepErr = shutErr
	}
	if stepErr != nil {
		out.Error = lspFailure(ctx, stepErr)
	} else if exit.Ended == lsp.EndedTerminated || exit.Ended == lsp.EndedKilled {
		msg := fmt.Sprintf("the server did not leave after shutdown and exit: it was %s", exit.Ended)
		if exit.ShutdownErr != nil {
			msg += " (" + exit.ShutdownErr.Error() + ")"
		}
		out.Error = &lspError{Kind: "shutdown", Message: msg}
	}
	return printLsp(stdout, stderr, *asJSON, out, texts)
}

// lspFailure classifies a failed step.
func lspFailure(ctx context.Context, err error) *lspError {
	var exit *lsp.ServerExitError
	var wait *lspWaitError
	kind := "failed"
	switch {
	case errors.As(err, &wait):
		kind = "diagnostics_timeout"
	case ctx.Err() != nil:
		kind = "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		kind = "timeout"
	case errors.As(err, &exit) && exit.Cause == nil:
		kind = "server_exited"
	case errors.Is(err, lsp.ErrFrameTooLarge), errors.Is(err, lsp.ErrMalformedFrame):
		kind = "protocol"
	}
	return &lspError{Kind: kind, Message: err.Error()}
}

// lspNavArgs are the navigation flags of subkit lsp.
type lspNavArgs struct {
	definition, references, symbols, rename string
	wait                                    time.Duration
}

// lspNavigate runs the navigation flags: each file is opened (as --open does) and the server
// waited for until ready (bounded by --wait), then asked.
func lspNavigate(ctx context.Context, c *lsp.Client, out *lspOutput, a lspNavArgs, open func(string) (string, int, error)) error {
	root := c.Root()
	ready := func(file string) (string, []byte, error) {
		uri, _, err := open(file)
		if err != nil {
			return "", nil, err
		}
		wctx, cancel := context.WithTimeout(ctx, a.wait)
		defer cancel()
		if err := c.WaitReady(wctx, uri); err != nil {
			if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
				return "", nil, fmt.Errorf("the server was not ready within --wait %v: %w", a.wait, err)
			}
			return "", nil, err
		}
		d, _ := c.Document(uri)
		return uri, []byte(d.Text), nil
	}
	place := func(spec string) (string, lsp.Position, error) {
		file, symbol, bySymbol := strings.Cut(spec, "#")
		var line, col int
		if !bySymbol {
			h, err := parseHoverAt(spec)
			if err != nil {
				return "", lsp.Position{}, fmt.Errorf("%q: want FILE:LINE:COL or FILE#SYMBOL", spec)
			}
			file, line, col = h.file, h.line, h.col
		}
		uri, text, err := ready(file)
		if err != nil {
			return "", lsp.Position{}, err
		}
		if bySymbol {
			syms, _ := c.DocumentSymbols(ctx, uri)
			if s, ok := findSymbol(syms, symbol); ok {
				return uri, s.SelectionRange.Start, nil
			}
			off := wordIndex(text, symbol)
			if off < 0 {
				return "", lsp.Position{}, fmt.Errorf("symbol %q does not appear as a word in %s", symbol, file)
			}
			pos, err := lsp.OffsetToPosition(text, off, c.PositionEncoding())
			return uri, pos, err
		}
		pos, err := lsp.PositionIn(text, line, col, c.PositionEncoding())
		return uri, pos, err
	}
	at := &lspAt{c: c, root: root}
	if a.definition != "" {
		uri, pos, err := place(a.definition)
		if err == nil {
			var locs []lsp.Location
			if locs, err = c.Definition(ctx, uri, pos); err == nil {
				out.Definition, _ = at.locations(locs)
			}
		}
		if err != nil {
			return fmt.Errorf("definition %s: %w", a.definition, err)
		}
	}
	if a.references != "" {
		uri, pos, err := place(a.references)
		if err == nil {
			var locs []lsp.Location
			if locs, err = c.References(ctx, uri, pos, true); err == nil {
				slices.SortStableFunc(locs, func(x, y lsp.Location) int {
					return cmp.Or(strings.Compare(x.URI, y.URI), cmp.Compare(x.Range.Start.Line, y.Range.Start.Line),
						cmp.Compare(x.Range.Start.Character, y.Range.Start.Character))
				})
				out.References, _ = at.locations(locs)
			}
		}
		if err != nil {
			return fmt.Errorf("references %s: %w", a.references, err)
		}
	}
	if a.symbols != "" {
		uri, _, err := ready(a.symbols)
		var syms []lsp.DocumentSymbol
		if err == nil {
			syms, err = c.DocumentSymbols(ctx, uri)
		}
		if err != nil {
			return fmt.Errorf("symbols %s: %w", a.symbols, err)
		}
		out.Symbols = []symbolOut{}
		texts := map[string][]byte{}
		var walk func(list []lsp.DocumentSymbol, depth int, container string)
		walk = func(list []lsp.DocumentSymbol, depth int, container string) {
			for _, s := range list {
				out.Symbols = append(out.Symbols, symbolOut{Name: s.Name, Kind: s.Kind.String(), Detail: s.Detail, Depth: depth, Container: container,
					Location: at.location(lsp.Location{URI: uri, Range: s.SelectionRange}, texts)})
				walk(s.Children, depth+1, s.Name)
			}
		}
		walk(syms, 0, "")
	}
	if a.rename != "" {
		i := strings.LastIndexByte(a.rename, '=')
		if i <= 0 || i == len(a.rename)-1 {
			return fmt.Errorf("rename %q: want FILE:LINE:COL=NEWNAME or FILE#SYMBOL=NEWNAME", a.rename)
		}
		uri, pos, err := place(a.rename[:i])
		var edit lsp.WorkspaceEdit
		if err == nil {
			edit, err = c.Rename(ctx, uri, pos, a.rename[i+1:])
		}
		if err == nil {
			out.Rename = &lspRenameOut{Files: []string{}}
			for _, op := range edit.Ops() {
				out.Rename.Edits += len(op.Edits)
			}
			var res lsp.EditResult
			res, err = c.ApplyEdit(ctx, edit)
			for _, p := range res.Files() {
				out.Rename.Files = append(out.Rename.Files, relPath(root, p))
			}
		}
		if err != nil {
			return fmt.Errorf("rename %s: %w", a.rename, err)
		}
	}
	return nil
}

// lspDefaultWait is --wait's default: a cold tsserver on a loaded machine takes 10-15s to
// publish its first diagnostics.
const lspDefaultWait = 60 * time.Second

// lspWaitError is a diagnostics wait that ran out.
type lspWaitError struct {
	file    string
	version int
	wait    time.Duration
}

func (e *lspWaitError) Error() string {
	return fmt.Sprintf("no diagnostics for %s (version %d) within --wait %v: the server may still be loading; raise --wait (an empty list would have meant a clean file)", e.file, e.version, e.wait)
}

func lspDiagnostics(all map[string]lsp.DiagnosticSet) []lspDiagnostic {
	out := []lspDiagnostic{}
	for uri, set := range all {
		for _, d := range set.Diagnostics {
			out = append(out, lspDiagnostic{URI: uri, Diagnostic: d})
		}
	}
	slices.SortStableFunc(out, func(a, b lspDiagnostic) int {
		return cmp.Or(strings.Compare(a.URI, b.URI), cmp.Compare(a.Range.Start.Line, b.Range.Start.Line),
			cmp.Compare(a.Range.Start.Character, b.Range.Start.Character))
	})
	return out
}

func printLsp(stdout, stderr io.Writer, asJSON bool, out lspOutput, texts map[string][]byte) int {
	code := 0
	if out.Error != nil {
		switch out.Error.Kind {
		case "cancelled":
			code = exitCancelled
		case "diagnostics_timeout":
			code = exitTimeout
		default:
			code = exitFailure
		}
	}
	if asJSON {
		out.Cancelled = out.Error != nil && out.Error.Kind == "cancelled"
		writeJSON(stdout, out)
		return code
	}
	if out.ServerInfo != nil {
		version := out.ServerInfo.Version
		var bi struct{ Version string } // gopls puts its whole build info here, as JSON
		if strings.HasPrefix(version, "{") && json.Unmarshal([]byte(version), &bi) == nil && bi.Version != "" {
			version = bi.Version
		}
		fmt.Fprintf(stdout, "server: %s %s\n", out.ServerInfo.Name, version)
	}
	shown := map[string]bool{}
	for _, set := range out.DiagnosticSets {
		shown[set.URI] = true
		fmt.Fprintf(stdout, "%s: version %d (after %s): %d diagnostic(s)\n", lspFile(set.URI), set.Version, set.After, len(set.Diagnostics))
		for _, d := range set.Diagnostics {
			printLspDiagnostic(stdout, set.URI, d, map[string][]byte{set.URI: set.text}, out.enc)
		}
	}
	for _, d := range out.Diagnostics { // files the server reported on without being asked
		if !shown[d.URI] {
			printLspDiagnostic(stdout, d.URI, d.Diagnostic, texts, out.enc)
		}
	}
	if out.Hover != nil {
		fmt.Fprintf(stdout, "hover:\n%s\n", out.Hover.Text())
	}
	for _, l := range []struct {
		what string
		locs []locationOut
	}{{"definition", out.Definition}, {"references", out.References}} {
		if l.locs != nil {
			fmt.Fprintf(stdout, "%s:\n%s", l.what, renderLocations(l.what, l.locs, 0))
		}
	}
	if out.Symbols != nil {
		fmt.Fprintln(stdout, "symbols:")
		for _, sy := range out.Symbols {
			fmt.Fprintf(stdout, "%s%s %s  %s:%d:%d\n", strings.Repeat("  ", sy.Depth), sy.Kind, sy.Name, sy.Location.Path, sy.Location.Line, sy.Location.Column)
		}
	}
	if out.Rename != nil {
		for _, f := range out.Rename.Files {
			fmt.Fprintf(stdout, "renamed in %s\n", f)
		}
		fmt.Fprintf(stdout, "rename: %d edit(s) in %d file(s), written to disk\n", out.Rename.Edits, len(out.Rename.Files))
	}
	if out.Shutdown != "" {
		fmt.Fprintf(stdout, "shutdown: %s\n", out.Shutdown)
	}
	if out.escaped > 0 {
		fmt.Fprintf(stdout, "[subkit: ended %d process(es) that had left the server's process group]\n", out.escaped)
	}
	if out.Error != nil {
		fmt.Fprintf(stderr, "subkit: %s\n", out.Error.Message)
	}
	if out.Shutdown != lsp.EndedClean.String() && out.StderrTail != "" {
		fmt.Fprintf(stderr, "[subkit: the server's stderr ends with]\n%s", out.StderrTail)
		if !strings.HasSuffix(out.StderrTail, "\n") {
			fmt.Fprintln(stderr)
		}
	}
	return code
}

func lspFile(uri string) string {
	if p, err := lsp.URIToPath(uri); err == nil {
		return p
	}
	return uri
}

// printLspDiagnostic prints FILE:LINE:COL: SEVERITY: MESSAGE [SOURCE], the column in bytes of
// the file's text as the client last had it.
func printLspDiagnostic(w io.Writer, uri string, d lsp.Diagnostic, texts map[string][]byte, enc lsp.PositionEncoding) {
	file := lspFile(uri)
	text, ok := texts[uri]
	if !ok {
		text, _ = lsp.ReadDocument(file, 0) // a file the server named: a regular file only
	}
	col, err := lsp.CharacterColumn(text, d.Range.Start, enc)
	if err != nil {
		col = d.Range.Start.Character
	}
	src := ""
	if d.Source != "" {
		src = " [" + d.Source + "]"
	}
	fmt.Fprintf(w, "%s:%d:%d: %v: %s%s\n", file, d.Range.Start.Line+1, col+1, d.Severity, d.Message, src)
}
