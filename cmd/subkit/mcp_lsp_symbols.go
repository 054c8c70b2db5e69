package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subkit/subkit/lsp"
)

// mcpMaxLocations bounds the locations (and symbols) one answer lists.
const mcpMaxLocations = 500

// lspAtIn names a place in the code: a file and a 1-based line and byte column (as compilers
// print them), or a symbol's name (its first whole-word use in the file, or, without a file,
// the workspace symbol of that name).
type lspAtIn struct {
	File   string   `json:"file,omitempty" jsonschema:"the file, relative to root or absolute"`
	Line   int      `json:"line,omitempty" jsonschema:"1-based line in file (with column)"`
	Column int      `json:"column,omitempty" jsonschema:"1-based column in bytes of the line, as compilers print it"`
	Symbol string   `json:"symbol,omitempty" jsonschema:"instead of line and column: a name: the file's symbol of that name, else its first use as a whole word in file; without file, the workspace symbol of that name (then server is needed)"`
	Root   string   `json:"root,omitempty" jsonschema:"the workspace root (default: the server's working directory)"`
	Server []string `json:"server,omitempty" jsonschema:"the language server's command line (default: the one subkit mcp --lsp names for file's extension)"`
	WaitMs int64    `json:"wait_ms,omitempty" jsonschema:"the longest wait for the server to be ready and answer, in milliseconds (default 60000)"`
}

type lspReferencesIn struct {
	lspAtIn
	ExcludeDeclaration bool `json:"exclude_declaration,omitempty" jsonschema:"leave the declaration out of the references"`
}

type lspRenameIn struct {
	lspAtIn
	NewName string `json:"new_name" jsonschema:"the symbol's new name"`
}

type lspSymbolsIn struct {
	File   string   `json:"file,omitempty" jsonschema:"list the symbols of this file (relative to root or absolute)"`
	Query  string   `json:"query,omitempty" jsonschema:"instead of file: search the workspace's symbols for this name (server, or file to choose the server, needed)"`
	Root   string   `json:"root,omitempty" jsonschema:"the workspace root (default: the server's working directory)"`
	Server []string `json:"server,omitempty" jsonschema:"the language server's command line (default: the one subkit mcp --lsp names for file's extension)"`
	WaitMs int64    `json:"wait_ms,omitempty" jsonschema:"the longest wait, in milliseconds (default 60000)"`
}

type locationOut struct {
	Path      string `json:"path" jsonschema:"the file, relative to root when under it"`
	Line      int    `json:"line" jsonschema:"1-based line"`
	Column    int    `json:"column" jsonschema:"1-based column, in bytes of the line"`
	EndLine   int    `json:"end_line"`
	EndColumn int    `json:"end_column"`
	Text      string `json:"text" jsonschema:"the line, trimmed"`
}

type lspLocationsOut struct {
	Locations []locationOut `json:"locations"`
	Omitted   int           `json:"omitted" jsonschema:"locations left out beyond 500"`
	Server    lspServerOut  `json:"server"`
}

type lspHoverOut struct {
	Text   string       `json:"text" jsonschema:"the hover's text (markdown or plain, as the server wrote it); empty when it has nothing to say"`
	Server lspServerOut `json:"server"`
}

type symbolOut struct {
	Name      string      `json:"name"`
	Kind      string      `json:"kind" jsonschema:"function, method, class, variable, ..."`
	Detail    string      `json:"detail,omitempty" jsonschema:"a signature or container, when the server gives one"`
	Location  locationOut `json:"location" jsonschema:"where its name is"`
	Depth     int         `json:"depth" jsonschema:"nesting in the file: 0 at the top, 1 inside a top-level symbol, ..."`
	Container string      `json:"container,omitempty"`
}

type lspSymbolsOut struct {
	Symbols []symbolOut  `json:"symbols"`
	Omitted int          `json:"omitted" jsonschema:"symbols left out beyond 500"`
	Server  lspServerOut `json:"server"`
}

type lspRenameOut struct {
	Files  []string     `json:"files" jsonschema:"every file the rename changed on disk (relative to root when under it), created, renamed or deleted"`
	Edits  int          `json:"edits" jsonschema:"text edits applied"`
	Server lspServerOut `json:"server"`
}

func (s *mcpServer) addLspSymbolTools(server *mcp.Server) {
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	addTool(s, server, &mcp.Tool{Name: "lsp_definition", Title: "Go to a symbol's definition",
		Description: "Where the symbol at a place (file + line + column, or a symbol name) is defined, from a language server that has " +
			"loaded the workspace. Files are taken as they are on disk now.", Annotations: ro}, (*mcpWorld).lspDefinitionTool)
	addTool(s, server, &mcp.Tool{Name: "lsp_references", Title: "Find a symbol's references",
		Description: "Every use of the symbol at a place (file + line + column, or a symbol name) in the workspace, its declaration included " +
			"unless exclude_declaration; asked once the server has loaded the workspace, so none is missing for a server still loading.",
		Annotations: ro}, (*mcpWorld).lspReferencesTool)
	addTool(s, server, &mcp.Tool{Name: "lsp_hover", Title: "Describe a symbol",
		Description: "The language server's hover at a place (file + line + column, or a symbol name): the symbol's type or signature and its documentation.",
		Annotations: ro}, (*mcpWorld).lspHoverTool)
	addTool(s, server, &mcp.Tool{Name: "lsp_symbols", Title: "List symbols",
		Description: "The symbols (functions, types, methods, ...) of a file, nested, or with query the workspace's symbols matching a name, each with where its name is.",
		Annotations: ro}, (*mcpWorld).lspSymbolsTool)
	addTool(s, server, &mcp.Tool{Name: "lsp_rename", Title: "Rename a symbol everywhere",
		Description: "Renames the symbol at a place (file + line + column, or a symbol name) to new_name in every file of the workspace, " +
			"as the language server computes it, and writes the changes to disk; reports every file changed. Nothing is written when " +
			"the server's edit cannot be applied whole."}, (*mcpWorld).lspRenameTool)
}

// lspAt is a resolved place: the client, the document and the position in it.
type lspAt struct {
	c    *lsp.Client
	root string
	argv []string
	uri  string
	text []byte
	pos  lsp.Position
	info lspServerOut
}

// lspSession runs fn on the world's server for argv and root, with the world's documents
// reconciled with the disk and keep (at most one file) open and diagnosed: the server is ready.
func (w *mcpWorld) lspSession(ctx context.Context, in lspAtIn, need bool, fn func(ctx context.Context, at *lspAt) error) error {
	refuse := func(format string, args ...any) error { return fmt.Errorf("[request refused: "+format+"]", args...) }
	wait, err := millis("wait_ms", in.WaitMs, mcpDefaultLspWait, mcpMaxWait)
	if err != nil {
		return refuse("%v", err)
	}
	root, err := w.lspRoot(in.Root, in.Server)
	if err != nil {
		return refuse("%v", err)
	}
	at := &lspAt{root: root, argv: in.Server}
	var path string
	if in.File != "" {
		path = in.File
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, path)
		}
		if at.text, err = lsp.ReadDocument(path, 0); err != nil {
			return refuse("file: %v", err)
		}
		at.uri = lsp.FileURI(path)
		if len(at.argv) == 0 {
			ext := strings.ToLower(filepath.Ext(path))
			if at.argv = w.s.opts.lsp[ext]; len(at.argv) == 0 {
				return refuse("no language server for %s: pass \"server\" (e.g. [\"gopls\"]), or start subkit mcp with --lsp %s=SERVER", in.File, cmp.Or(ext, "EXT"))
			}
		}
	} else if len(at.argv) == 0 {
		return refuse("name a file (its extension chooses the server) or pass \"server\"")
	}
	if need {
		switch {
		case in.Symbol == "" && (in.File == "" || in.Line < 1 || in.Column < 1):
			return refuse("give file with line and column (both from 1), or symbol")
		case in.Symbol != "" && in.Line != 0:
			return refuse("give line and column, or symbol, not both")
		}
	}

	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := w.lsp.lock(wctx); err != nil {
		return err
	}
	defer w.lsp.unlock()
	fail := func(err error) error {
		if errors.Is(err, lsp.ErrPosition) {
			return refuse("%v", err)
		}
		return lspCallError(ctx, at.argv, err)
	}
	if at.c, err = w.lspClient(wctx, at.argv, root); err != nil {
		return fail(err)
	}
	at.info = lspServerOut{Command: at.argv, Root: root}
	if si := at.c.InitializeResult().ServerInfo; si != nil {
		at.info.Name, at.info.Version = si.Name, shortVersion(si.Version)
	}
	keep := map[string]bool{}
	if at.uri != "" {
		keep[at.uri] = true
	}
	if err := lspReconcile(wctx, at.c, keep); err != nil {
		return fail(err)
	}
	if at.uri != "" {
		if at.text, err = lsp.ReadDocument(path, 0); err != nil { // as it is now, after the reconciling
			return refuse("file: %v", err)
		}
		if _, err := syncDocument(wctx, at.c, at.uri, path, string(at.text)); err != nil {
			return fail(err)
		}
	}
	if err := at.c.WaitReady(wctx, at.uri); err != nil {
		return fail(err)
	}
	if need {
		switch {
		case in.Symbol != "" && at.uri != "":
			// The file's own symbol of that name (its declaration, never a mention in a
			// comment), else the name's first use as a word.
			syms, _ := at.c.DocumentSymbols(wctx, at.uri)
			if s, ok := findSymbol(syms, in.Symbol); ok {
				at.pos = s.SelectionRange.Start
				break
			}
			off := wordIndex(at.text, in.Symbol)
			if off < 0 {
				return refuse("symbol %q does not appear as a word in %s", in.Symbol, in.File)
			}
			if at.pos, err = lsp.OffsetToPosition(at.text, off, at.c.PositionEncoding()); err != nil {
				return fail(err)
			}
		case in.Symbol != "":
			syms, err := at.c.WorkspaceSymbols(wctx, in.Symbol)
			if err != nil {
				return fail(err)
			}
			i := slices.IndexFunc(syms, func(s lsp.SymbolInformation) bool { return s.Name == in.Symbol })
			if i < 0 {
				return refuse("no workspace symbol named %q (the server found %d matching the query); name the file", in.Symbol, len(syms))
			}
			at.uri, at.pos = syms[i].Location.URI, syms[i].Location.Range.Start
		default:
			if at.pos, err = lsp.PositionIn(at.text, in.Line, in.Column, at.c.PositionEncoding()); err != nil {
				return refuse("line %d, column %d of %s: %v", in.Line, in.Column, in.File, err)
			}
		}
	}
	if err := fn(wctx, at); err != nil {
		return fail(err)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("[cancelled: %v]", ctx.Err())
	}
	return nil
}

// findSymbol finds the first symbol named name, depth first.
func findSymbol(list []lsp.DocumentSymbol, name string) (lsp.DocumentSymbol, bool) {
	for _, s := range list {
		if s.Name == name {
			return s, true
		}
		if c, ok := findSymbol(s.Children, name); ok {
			return c, true
		}
	}
	return lsp.DocumentSymbol{}, false
}

// wordIndex is the byte offset of the first whole-word occurrence of word in text, or -1.
func wordIndex(text []byte, word string) int {
	isWord := func(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }
	for from := 0; ; {
		i := bytes.Index(text[from:], []byte(word))
		if i < 0 {
			return -1
		}
		i += from
		before, _ := utf8.DecodeLastRune(text[:i])
		after, _ := utf8.DecodeRune(text[i+len(word):])
		if (i == 0 || !isWord(before)) && (i+len(word) == len(text) || !isWord(after)) {
			return i
		}
		from = i + 1
	}
}

// locations renders locs with byte columns and their lines, paths relative to the root.
func (at *lspAt) locations(locs []lsp.Location) ([]locationOut, int) {
	texts := map[string][]byte{}
	out := []locationOut{}
	for i, l := range locs {
		if i == mcpMaxLocations {
			return out, len(locs) - i
		}
		out = append(out, at.location(l, texts))
	}
	return out, 0
}

func (at *lspAt) location(l lsp.Location, texts map[string][]byte) locationOut {
	p, err := lsp.URIToPath(l.URI)
	if err != nil {
		return locationOut{Path: l.URI, Line: l.Range.Start.Line + 1, Column: l.Range.Start.Character + 1,
			EndLine: l.Range.End.Line + 1, EndColumn: l.Range.End.Character + 1}
	}
	text, ok := texts[l.URI]
	if !ok {
		if d, open := at.c.Document(l.URI); open {
			text = []byte(d.Text)
		} else {
			text, _ = lsp.ReadDocument(p, 0)
		}
		texts[l.URI] = text
	}
	enc := at.c.PositionEncoding()
	col := func(pos lsp.Position) int {
		if c, err := lsp.CharacterColumn(text, pos, enc); err == nil {
			return c + 1
		}
		return pos.Character + 1
	}
	line := ""
	if lines := bytes.Split(text, []byte("\n")); l.Range.Start.Line < len(lines) {
		line = strings.TrimSpace(string(lines[l.Range.Start.Line]))
	}
	return locationOut{Path: relPath(at.root, p), Line: l.Range.Start.Line + 1, Column: col(l.Range.Start),
		EndLine: l.Range.End.Line + 1, EndColumn: col(l.Range.End), Text: line}
}

func relPath(root, p string) string {
	if rel, err := filepath.Rel(root, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return rel
	}
	return p
}

func renderLocations(what string, locs []locationOut, omitted int) string {
	var b strings.Builder
	for _, l := range locs {
		fmt.Fprintf(&b, "%s:%d:%d: %s\n", l.Path, l.Line, l.Column, l.Text)
	}
	if omitted > 0 {
		fmt.Fprintf(&b, "[%d more left out]\n", omitted)
	}
	fmt.Fprintf(&b, "[%d %s]\n", len(locs)+omitted, what)
	return b.String()
}

func (w *mcpWorld) lspDefinitionTool(ctx context.Context, req *mcp.CallToolRequest, in lspAtIn) (string, lspLocationsOut, error) {
	var out lspLocationsOut
	err := w.lspSession(ctx, in, true, func(ctx context.Context, at *lspAt) error {
		locs, err := at.c.Definition(ctx, at.uri, at.pos)
		if err != nil {
			return err
		}
		out.Locations, out.Omitted = at.locations(locs)
		out.Server = at.info
		return nil
	})
	if err != nil {
		return "", lspLocationsOut{}, err
	}
	return renderLocations("definition(s)", out.Locations, out.Omitted), out, nil
}

func (w *mcpWorld) lspReferencesTool(ctx context.Context, req *mcp.CallToolRequest, in lspReferencesIn) (string, lspLocationsOut, error) {
	var out lspLocationsOut
	err := w.lspSession(ctx, in.lspAtIn, true, func(ctx context.Context, at *lspAt) error {
		locs, err := at.c.References(ctx, at.uri, at.pos, !in.ExcludeDeclaration)
		if err != nil {
			return err
		}
		slices.SortStableFunc(locs, func(a, b lsp.Location) int {
			return cmp.Or(strings.Compare(a.URI, b.URI), cmp.Compare(a.Range.Start.Line, b.Range.Start.Line),
				cmp.Compare(a.Range.Start.Character, b.Range.Start.Character))
		})
		out.Locations, out.Omitted = at.locations(locs)
		out.Server = at.info
		return nil
	})
	if err != nil {
		return "", lspLocationsOut{}, err
	}
	return renderLocations("reference(s)", out.Locations, out.Omitted), out, nil
}

func (w *mcpWorld) lspHoverTool(ctx context.Context, req *mcp.CallToolRequest, in lspAtIn) (string, lspHoverOut, error) {
	var out lspHoverOut
	err := w.lspSession(ctx, in, true, func(ctx context.Context, at *lspAt) error {
		h, err := at.c.Hover(ctx, at.uri, at.pos)
		if err != nil {
			return err
		}
		out.Text, out.Server = h.Text(), at.info
		return nil
	})
	if err != nil {
		return "", lspHoverOut{}, err
	}
	if out.Text == "" {
		return "[the server has nothing to say about this place]\n", out, nil
	}
	return out.Text + "\n", out, nil
}

func (w *mcpWorld) lspSymbolsTool(ctx context.Context, req *mcp.CallToolRequest, in lspSymbolsIn) (string, lspSymbolsOut, error) {
	if in.File == "" && in.Query == "" {
		return "", lspSymbolsOut{}, errors.New("[request refused: give file (its symbols) or query (the workspace's symbols)]")
	}
	out := lspSymbolsOut{Symbols: []symbolOut{}}
	err := w.lspSession(ctx, lspAtIn{File: in.File, Root: in.Root, Server: in.Server, WaitMs: in.WaitMs}, false, func(ctx context.Context, at *lspAt) error {
		out.Server = at.info
		texts := map[string][]byte{}
		add := func(s symbolOut) {
			if len(out.Symbols) == mcpMaxLocations {
				out.Omitted++
				return
			}
			out.Symbols = append(out.Symbols, s)
		}
		if in.Query != "" {
			syms, err := at.c.WorkspaceSymbols(ctx, in.Query)
			if err != nil {
				return err
			}
			for _, s := range syms {
				add(symbolOut{Name: s.Name, Kind: s.Kind.String(), Container: s.ContainerName, Location: at.location(s.Location, texts)})
			}
			return nil
		}
		syms, err := at.c.DocumentSymbols(ctx, at.uri)
		if err != nil {
			return err
		}
		var walk func(list []lsp.DocumentSymbol, depth int, container string)
		walk = func(list []lsp.DocumentSymbol, depth int, container string) {
			for _, s := range list {
				add(symbolOut{Name: s.Name, Kind: s.Kind.String(), Detail: s.Detail, Depth: depth, Container: container,
					Location: at.location(lsp.Location{URI: at.uri, Range: s.SelectionRange}, texts)})
				walk(s.Children, depth+1, s.Name)
			}
		}
		walk(syms, 0, "")
		return nil
	})
	if err != nil {
		return "", lspSymbolsOut{}, err
	}
	var b strings.Builder
	for _, s := range out.Symbols {
		fmt.Fprintf(&b, "%s%s %s  %s:%d:%d\n", strings.Repeat("  ", s.Depth), s.Kind, s.Name, s.Location.Path, s.Location.Line, s.Location.Column)
	}
	if out.Omitted > 0 {
		fmt.Fprintf(&b, "[%d more left out]\n", out.Omitted)
	}
	fmt.Fprintf(&b, "[%d symbol(s)]\n", len(out.Symbols)+out.Omitted)
	return b.String(), out, nil
}

func (w *mcpWorld) lspRenameTool(ctx context.Context, req *mcp.CallToolRequest, in lspRenameIn) (string, lspRenameOut, error) {
	if in.NewName == "" {
		return "", lspRenameOut{}, errors.New("[request refused: new_name is empty]")
	}
	out := lspRenameOut{Files: []string{}}
	err := w.lspSession(ctx, in.lspAtIn, true, func(ctx context.Context, at *lspAt) error {
		edit, err := at.c.Rename(ctx, at.uri, at.pos, in.NewName)
		if err != nil {
			return err
		}
		for _, op := range edit.Ops() {
			out.Edits += len(op.Edits)
		}
		res, err := at.c.ApplyEdit(ctx, edit)
		for _, p := range res.Files() {
			out.Files = append(out.Files, relPath(at.root, p))
		}
		out.Server = at.info
		return err
	})
	if err != nil {
		return "", lspRenameOut{}, err
	}
	var b strings.Builder
	for _, f := range out.Files {
		fmt.Fprintf(&b, "changed %s\n", f)
	}
	fmt.Fprintf(&b, "[%d edit(s) in %d file(s), written to disk]\n", out.Edits, len(out.Files))
	return b.String(), out, nil
}
