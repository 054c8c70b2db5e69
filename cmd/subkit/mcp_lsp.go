package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subkit/subkit/lsp"
)

// lspState is what a world's language-server tools share: one tool call at a time works on
// the world's documents (a call closes the documents it does not name). The zero value is
// ready.
type lspState struct {
	once sync.Once
	sem  chan struct{}
}

// lock takes the world's documents for one call, or fails with ctx's error.
func (l *lspState) lock(ctx context.Context) error {
	l.once.Do(func() { l.sem = make(chan struct{}, 1) })
	select {
	case l.sem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("[cancelled: %v]", ctx.Err())
	}
}

func (l *lspState) unlock() { <-l.sem }

// mcpLspIdle ends a client's language server that none of its calls has used for this long.
const mcpLspIdle = 30 * time.Minute

// mcpMaxDiagnostics bounds the diagnostics reported per file.
const mcpMaxDiagnostics = 200

type lspDiagnosticsIn struct {
	Files    []string `json:"files" jsonschema:"the files to diagnose, relative to root or absolute"`
	Root     string   `json:"root,omitempty" jsonschema:"the workspace root (default: the server's working directory); one language server runs per server command and root, kept for later calls"`
	Server   []string `json:"server,omitempty" jsonschema:"the language server's command line, e.g. [\"gopls\"] or [\"pyright-langserver\", \"--stdio\"] (default: the one subkit mcp --lsp names for each file's extension)"`
	WaitMs   int64    `json:"wait_ms,omitempty" jsonschema:"the longest wait for the diagnostics, in milliseconds (default 60000, at most 600000); a server still loading may need more"`
	SettleMs int64    `json:"settle_ms,omitempty" jsonschema:"diagnostics are taken once the server has published none for this long (default 500)"`
}

type diagOut struct {
	Line      int    `json:"line" jsonschema:"1-based line"`
	Column    int    `json:"column" jsonschema:"1-based column, in bytes of the line"`
	EndLine   int    `json:"end_line"`
	EndColumn int    `json:"end_column"`
	Severity  string `json:"severity" jsonschema:"error, warning, information or hint"`
	Source    string `json:"source" jsonschema:"what reported it (compiler, a linter), or empty"`
	Code      string `json:"code" jsonschema:"the diagnostic's code (a string or number the server sent), or empty"`
	Message   string `json:"message"`
}

type fileDiagOut struct {
	Path        string    `json:"path" jsonschema:"the file, as given"`
	URI         string    `json:"uri"`
	Version     int       `json:"version" jsonschema:"the document version sent to the server (a changed file is sent again as its next version)"`
	Complete    bool      `json:"complete" jsonschema:"the server answered this version within wait_ms; false: the diagnostics may be missing or stale"`
	Diagnostics []diagOut `json:"diagnostics"`
	Omitted     int       `json:"omitted" jsonschema:"diagnostics left out beyond 200"`
}

type lspServerOut struct {
	Command []string `json:"command"`
	Root    string   `json:"root"`
	Name    string   `json:"name" jsonschema:"the server's name, as it says in initialize"`
	Version string   `json:"version"`
}

type lspDiagnosticsOut struct {
	Files   []fileDiagOut  `json:"files"`
	Servers []lspServerOut `json:"servers"`
}

func (s *mcpServer) addLspTools(server *mcp.Server) {
	addTool(s, server, &mcp.Tool{Name: "lsp_diagnostics", Title: "Diagnose files with a language server",
		Description: "Returns the diagnostics (errors, warnings) a language server reports for files under a workspace root: " +
			"the server is started on first use and kept for later calls (restarted after a crash); each file is sent as it is " +
			"on disk now, and its diagnostics are those of that version, once the server has settled. What changed on disk " +
			"since the last call (other files this one depends on) reaches the server first.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}, (*mcpWorld).lspDiagnosticsTool)
	s.addLspSymbolTools(server)
}

// lspGroup is the files one server diagnoses.
type lspGroup struct {
	argv  []string
	files []int // indexes into the input
}

// lspRoot is the workspace root a language-server tool names (its directory, absolute; the
// server's working directory when empty), after checking it and the server's argv.
func (w *mcpWorld) lspRoot(root string, server []string) (string, error) {
	if root == "" {
		root = w.s.cwd
	} else if !filepath.IsAbs(root) {
		root = filepath.Join(w.s.cwd, root)
	}
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("root %s is not a directory", root)
	}
	if len(server) > 0 && server[0] == "" {
		return "", errors.New("server: the first word is the program and must not be empty")
	}
	return root, nil
}

func (w *mcpWorld) lspDiagnosticsTool(ctx context.Context, req *mcp.CallToolRequest, in lspDiagnosticsIn) (string, lspDiagnosticsOut, error) {
	refuse := func(format string, args ...any) (string, lspDiagnosticsOut, error) {
		return "", lspDiagnosticsOut{}, fmt.Errorf("[request refused: "+format+"]", args...)
	}
	if len(in.Files) == 0 {
		return refuse("files is empty; name at least one file")
	}
	wait, err := millis("wait_ms", in.WaitMs, mcpDefaultLspWait, mcpMaxWait)
	if err != nil {
		return refuse("%v", err)
	}
	settle, err := millis("settle_ms", in.SettleMs, mcpDefaultSettle, mcpMaxWait)
	if err != nil {
		return refuse("%v", err)
	}
	root, err := w.lspRoot(in.Root, in.Server)
	if err != nil {
		return refuse("%v", err)
	}
	paths := make([]string, len(in.Files))
	texts := make([][]byte, len(in.Files))
	var groups []*lspGroup
	for i, f := range in.Files {
		p := f
		if !filepath.IsAbs(p) {
			p = filepath.Join(root, p)
		}
		text, err := lsp.ReadDocument(p, 0) // a regular file only: never a link or FIFO a confined program put there
		if err != nil {
			return refuse("files[%d]: %v", i, err)
		}
		paths[i], texts[i] = p, text
		argv := in.Server
		if len(argv) == 0 {
			ext := strings.ToLower(filepath.Ext(p))
			if argv = w.s.opts.lsp[ext]; len(argv) == 0 {
				return refuse("no language server for %s: pass \"server\" (e.g. [\"gopls\"]), or start subkit mcp with --lsp %s=SERVER", f, cmp.Or(ext, "EXT"))
			}
		}
		k := slices.IndexFunc(groups, func(g *lspGroup) bool { return slices.Equal(g.argv, argv) })
		if k < 0 {
			groups = append(groups, &lspGroup{argv: argv})
			k = len(groups) - 1
		}
		groups[k].files = append(groups[k].files, i)
	}

	out := lspDiagnosticsOut{Files: make([]fileDiagOut, len(in.Files)), Servers: []lspServerOut{}}
	stop := w.s.progress(ctx, req, "lsp_diagnostics")
	defer stop()
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := w.lsp.lock(wctx); err != nil {
		return "", lspDiagnosticsOut{}, err
	}
	defer w.lsp.unlock()
	for _, g := range groups {
		c, err := w.lspClient(wctx, g.argv, root)
		if err != nil {
			return "", lspDiagnosticsOut{}, lspCallError(ctx, g.argv, err)
		}
		// The server's view of the disk first: what changed since the last call is sent, and
		// the documents this call does not name are closed (the server reads them from disk).
		named := map[string]bool{}
		for _, i := range g.files {
			named[lsp.FileURI(paths[i])] = true
		}
		if err := lspReconcile(wctx, c, named); err != nil {
			return "", lspDiagnosticsOut{}, lspCallError(ctx, g.argv, err)
		}
		for _, i := range g.files { // as it is on disk now, after the reconciling
			if text, err := lsp.ReadDocument(paths[i], 0); err == nil {
				texts[i] = text
			}
		}
		info := lspServerOut{Command: g.argv, Root: root}
		if si := c.InitializeResult().ServerInfo; si != nil {
			info.Name, info.Version = si.Name, shortVersion(si.Version)
		}
		out.Servers = append(out.Servers, info)
		versions := make([]int, len(g.files))
		for j, i := range g.files {
			uri := lsp.FileURI(paths[i])
			if versions[j], err = syncDocument(wctx, c, uri, paths[i], string(texts[i])); err != nil {
				return "", lspDiagnosticsOut{}, lspCallError(ctx, g.argv, err)
			}
			out.Files[i] = fileDiagOut{Path: in.Files[i], URI: uri, Version: versions[j], Diagnostics: []diagOut{}}
		}
		answered := make([]bool, len(g.files))
		for j, i := range g.files {
			if _, err := c.Diagnostics(wctx, out.Files[i].URI, versions[j]); err != nil {
				if ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) {
					return "", lspDiagnosticsOut{}, lspCallError(ctx, g.argv, err)
				}
				break
			}
			answered[j] = true
		}
		if err := c.WaitQuiet(wctx, settle); err != nil && wctx.Err() == nil {
			return "", lspDiagnosticsOut{}, lspCallError(ctx, g.argv, err)
		}
		for j, i := range g.files {
			set, err := c.Diagnostics(ctx, out.Files[i].URI, 0, lsp.NoWait)
			if err != nil || set.Version < versions[j] {
				continue
			}
			f := &out.Files[i]
			f.Complete = answered[j]
			for k, d := range set.Diagnostics {
				if k == mcpMaxDiagnostics {
					f.Omitted = len(set.Diagnostics) - k
					break
				}
				f.Diagnostics = append(f.Diagnostics, diagOf(d, texts[i], c.PositionEncoding()))
			}
		}
	}
	if ctx.Err() != nil {
		return "", lspDiagnosticsOut{}, fmt.Errorf("[cancelled: %v]", ctx.Err())
	}
	return renderDiagnostics(out), out, nil
}

// lspClient is the world's running server for argv and root, started on first use: it
// watches the root, so that what changes on disk between calls reaches it, and a known
// server gets its preset's settings (lsp.WithPreset; the command line is kept as given).
func (w *mcpWorld) lspClient(ctx context.Context, argv []string, root string) (*lsp.Client, error) {
	srv, err := w.pool.Get(ctx, lsp.WithPreset(lsp.Config{Path: argv[0], Args: argv[1:], Root: root, WatchFiles: true}))
	if err != nil {
		return nil, err
	}
	return srv.Client(ctx)
}

// lspReconcile brings the server's view in line with the disk before a question: the changes
// the watcher saw are sent, open documents that changed on disk are sent again (closed when
// their file is gone), and the open documents not in keep are closed.
func lspReconcile(ctx context.Context, c *lsp.Client, keep map[string]bool) error {
	if err := c.SyncFiles(ctx); err != nil {
		return err
	}
	for _, d := range c.Documents() {
		if keep[d.URI] {
			continue
		}
		if err := c.CloseDocument(ctx, d.URI); err != nil && !errors.Is(err, lsp.ErrNotOpen) {
			return err
		}
	}
	return nil
}

// syncDocument sends text as uri's current version: opened the first time, changed when it
// differs from what the server has, as it is otherwise. It returns the version.
func syncDocument(ctx context.Context, c *lsp.Client, uri, path, text string) (int, error) {
	if d, ok := c.Document(uri); ok {
		if d.Text == text {
			return d.Version, nil
		}
		return c.Change(ctx, uri, lsp.TextChange{Text: text})
	}
	return c.Open(ctx, uri, lsp.LanguageID(path), text)
}

func diagOf(d lsp.Diagnostic, text []byte, enc lsp.PositionEncoding) diagOut {
	col := func(p lsp.Position) int {
		if c, err := lsp.CharacterColumn(text, p, enc); err == nil {
			return c + 1
		}
		return p.Character + 1
	}
	sev := d.Severity.String()
	if d.Severity == 0 {
		sev = "error" // the protocol leaves an unset severity to the client: editors show an error
	}
	return diagOut{Line: d.Range.Start.Line + 1, Column: col(d.Range.Start), EndLine: d.Range.End.Line + 1, EndColumn: col(d.Range.End),
		Severity: sev, Source: d.Source, Code: codeText(d.Code), Message: d.Message}
}

// codeText is a diagnostic's code as text: a JSON string unquoted, a number as it is.
func codeText(raw json.RawMessage) string {
	var str string
	if json.Unmarshal(raw, &str) == nil {
		return str
	}
	if string(raw) == "null" {
		return ""
	}
	return string(raw)
}

// shortVersion is a server's version as people write it: gopls sends its build info as JSON.
func shortVersion(v string) string {
	var bi struct{ Version string }
	if strings.HasPrefix(v, "{") && json.Unmarshal([]byte(v), &bi) == nil && bi.Version != "" {
		return bi.Version
	}
	return v
}

func lspCallError(ctx context.Context, argv []string, err error) error {
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("[cancelled: %v]", ctx.Err())
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("[the language server %q did not answer within wait_ms: %v; it may still be loading: call again, or raise wait_ms]", strings.Join(argv, " "), err)
	}
	kind, _ := startFailure(err)
	if kind == "not_found" || kind == "permission" {
		return fmt.Errorf("[request refused: the language server %q could not be started: %v]", strings.Join(argv, " "), err)
	}
	return fmt.Errorf("[tool failure: the language server %q: %v]", strings.Join(argv, " "), err)
}

func renderDiagnostics(out lspDiagnosticsOut) string {
	var b strings.Builder
	total := 0
	for _, f := range out.Files {
		total += len(f.Diagnostics) + f.Omitted
		state := ""
		if !f.Complete {
			state = "; the server did not answer this version within wait_ms, so these may be missing or stale"
		}
		fmt.Fprintf(&b, "%s: %d diagnostic(s) (version %d%s)\n", f.Path, len(f.Diagnostics)+f.Omitted, f.Version, state)
		for _, d := range f.Diagnostics {
			src := ""
			if d.Source != "" {
				src = " [" + d.Source + "]"
			}
			fmt.Fprintf(&b, "%s:%d:%d: %s: %s%s\n", f.Path, d.Line, d.Column, d.Severity, d.Message, src)
		}
		if f.Omitted > 0 {
			fmt.Fprintf(&b, "[%d more diagnostics of %s are left out]\n", f.Omitted, f.Path)
		}
	}
	fmt.Fprintf(&b, "[%d diagnostic(s) in %d file(s)]\n", total, len(out.Files))
	return b.String()
}
