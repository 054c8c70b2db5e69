package lsp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// Typed requests for navigation and edits. Every Position counts characters in the negotiated
// PositionEncoding; CharacterColumn (or Client.ByteColumn) turns one into a byte column.
// Locations the server answers as LocationLinks are normalised to Locations (the target's
// selection range: the name itself, where editors put the cursor). A server with nothing to
// say gives an empty result and a nil error; one that does not offer the request answers
// MethodNotFound (a *RPCError).

// LocationLink is how servers may answer the goto requests (definitionProvider with
// linkSupport): the target, its whole range and the range of its name.
type LocationLink struct {
	OriginSelectionRange *Range `json:"originSelectionRange,omitempty"`
	TargetURI            string `json:"targetUri"`
	TargetRange          Range  `json:"targetRange"`
	TargetSelectionRange Range  `json:"targetSelectionRange"`
}

// decodeLocations reads Location | Location[] | LocationLink[] | null as Locations.
func decodeLocations(raw json.RawMessage) ([]Location, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return []Location{}, nil
	}
	var items []json.RawMessage
	if raw[0] == '[' {
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, err
		}
	} else {
		items = []json.RawMessage{raw}
	}
	out := make([]Location, 0, len(items))
	for _, it := range items {
		var probe struct {
			TargetURI *string `json:"targetUri"`
		}
		if err := json.Unmarshal(it, &probe); err != nil {
			return nil, err
		}
		if probe.TargetURI != nil {
			var l LocationLink
			if err := json.Unmarshal(it, &l); err != nil {
				return nil, err
			}
			out = append(out, Location{URI: l.TargetURI, Range: l.TargetSelectionRange})
			continue
		}
		var l Location
		if err := json.Unmarshal(it, &l); err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

func positionParams(uri string, pos Position) map[string]any {
	return map[string]any{"textDocument": map[string]string{"uri": uri}, "position": pos}
}

// locations sends a goto request and normalises its answer.
func (c *Client) locations(ctx context.Context, method string, params any) ([]Location, error) {
	if err := c.usable(ctx, method); err != nil {
		return nil, err
	}
	var raw json.RawMessage
	if err := c.Call(ctx, method, params, &raw); err != nil {
		return nil, err
	}
	locs, err := decodeLocations(raw)
	if err != nil {
		return nil, newError(method, "", nil, fmt.Errorf("decode result: %w", err))
	}
	return locs, nil
}

// Definition sends textDocument/definition: where the symbol at pos is defined.
func (c *Client) Definition(ctx context.Context, uri string, pos Position) ([]Location, error) {
	return c.locations(ctx, "textDocument/definition", positionParams(uri, pos))
}

// Declaration sends textDocument/declaration: where the symbol at pos is declared (a C
// prototype, for instance).
func (c *Client) Declaration(ctx context.Context, uri string, pos Position) ([]Location, error) {
	return c.locations(ctx, "textDocument/declaration", positionParams(uri, pos))
}

// TypeDefinition sends textDocument/typeDefinition: where the type of the symbol at pos is
// defined.
func (c *Client) TypeDefinition(ctx context.Context, uri string, pos Position) ([]Location, error) {
	return c.locations(ctx, "textDocument/typeDefinition", positionParams(uri, pos))
}

// Implementation sends textDocument/implementation: the implementations of the interface or
// abstract member at pos.
func (c *Client) Implementation(ctx context.Context, uri string, pos Position) ([]Location, error) {
	return c.locations(ctx, "textDocument/implementation", positionParams(uri, pos))
}

// References sends textDocument/references: every use of the symbol at pos, and its
// declaration too when includeDeclaration is set. A server still loading its project may
// answer with only what it has seen so far: call WaitReady first.
func (c *Client) References(ctx context.Context, uri string, pos Position, includeDeclaration bool) ([]Location, error) {
	p := positionParams(uri, pos)
	p["context"] = map[string]bool{"includeDeclaration": includeDeclaration}
	return c.locations(ctx, "textDocument/references", p)
}

// CompletionItem is one proposal of textDocument/completion. TextEdit, when set, is a TextEdit
// or an InsertReplaceEdit, as the server sent it; Documentation is a string or MarkupContent
// (DocumentationText flattens it).
type CompletionItem struct {
	Label         string          `json:"label"`
	Kind          int             `json:"kind,omitempty"`
	Detail        string          `json:"detail,omitempty"`
	Documentation json.RawMessage `json:"documentation,omitempty"`
	SortText      string          `json:"sortText,omitempty"`
	FilterText    string          `json:"filterText,omitempty"`
	InsertText    string          `json:"insertText,omitempty"`
	TextEdit      json.RawMessage `json:"textEdit,omitempty"`
	Data          json.RawMessage `json:"data,omitempty"`
}

// DocumentationText returns the item's documentation as text.
func (it CompletionItem) DocumentationText() string { return markedText(it.Documentation) }

// CompletionList is the answer to textDocument/completion (an array of items is read as a
// complete list).
type CompletionList struct {
	IsIncomplete bool             `json:"isIncomplete"`
	Items        []CompletionItem `json:"items"`
}

// Completion sends textDocument/completion at pos.
func (c *Client) Completion(ctx context.Context, uri string, pos Position) (CompletionList, error) {
	const method = "textDocument/completion"
	if err := c.usable(ctx, method); err != nil {
		return CompletionList{}, err
	}
	var raw json.RawMessage
	if err := c.Call(ctx, method, positionParams(uri, pos), &raw); err != nil {
		return CompletionList{}, err
	}
	raw = bytes.TrimSpace(raw)
	list := CompletionList{Items: []CompletionItem{}}
	var err error
	switch {
	case len(raw) == 0 || string(raw) == "null":
	case raw[0] == '[':
		err = json.Unmarshal(raw, &list.Items)
	default:
		err = json.Unmarshal(raw, &list)
	}
	if err != nil {
		return CompletionList{}, newError(method, "", nil, fmt.Errorf("decode result: %w", err))
	}
	if list.Items == nil {
		list.Items = []CompletionItem{}
	}
	return list, nil
}

// SymbolKind is the LSP symbol kind: 5 class, 6 method, 12 function, 13 variable, ...
type SymbolKind int

var symbolKinds = [...]string{"", "file", "module", "namespace", "package", "class", "method", "property",
	"field", "constructor", "enum", "interface", "function", "variable", "constant", "string", "number",
	"boolean", "array", "object", "key", "null", "enum member", "struct", "event", "operator", "type parameter"}

func (k SymbolKind) String() string {
	if k > 0 && int(k) < len(symbolKinds) {
		return symbolKinds[k]
	}
	return fmt.Sprintf("symbol kind %d", int(k))
}

// DocumentSymbol is a symbol of a document, with the symbols inside it. Range covers the
// whole symbol (its body too), SelectionRange its name.
type DocumentSymbol struct {
	Name           string           `json:"name"`
	Detail         string           `json:"detail,omitempty"`
	Kind           SymbolKind       `json:"kind"`
	Range          Range            `json:"range"`
	SelectionRange Range            `json:"selectionRange"`
	Children       []DocumentSymbol `json:"children,omitempty"`
}

// SymbolInformation is a symbol somewhere in the workspace (textDocument/documentSymbol's flat
// form, workspace/symbol). A WorkspaceSymbol whose location has no range gets the zero Range.
type SymbolInformation struct {
	Name          string     `json:"name"`
	Kind          SymbolKind `json:"kind"`
	ContainerName string     `json:"containerName,omitempty"`
	Location      Location   `json:"location"`
}

// DocumentSymbols sends textDocument/documentSymbol. A server that answers the flat form
// (SymbolInformation) gets its symbols nested by their ranges: a symbol whose range lies
// inside another's becomes its child; Range and SelectionRange are then both the location's
// range.
func (c *Client) DocumentSymbols(ctx context.Context, uri string) ([]DocumentSymbol, error) {
	const method = "textDocument/documentSymbol"
	if err := c.usable(ctx, method); err != nil {
		return nil, err
	}
	var raw []json.RawMessage
	if err := c.Call(ctx, method, map[string]any{"textDocument": map[string]string{"uri": uri}}, &raw); err != nil {
		return nil, err
	}
	out := []DocumentSymbol{}
	var flat []SymbolInformation
	for _, it := range raw {
		var probe struct {
			Location *Location `json:"location"`
		}
		if err := json.Unmarshal(it, &probe); err != nil {
			return nil, newError(method, "", nil, fmt.Errorf("decode result: %w", err))
		}
		if probe.Location != nil {
			var si SymbolInformation
			if err := json.Unmarshal(it, &si); err != nil {
				return nil, newError(method, "", nil, fmt.Errorf("decode result: %w", err))
			}
			flat = append(flat, si)
			continue
		}
		var ds DocumentSymbol
		if err := json.Unmarshal(it, &ds); err != nil {
			return nil, newError(method, "", nil, fmt.Errorf("decode result: %w", err))
		}
		out = append(out, ds)
	}
	for _, si := range flat {
		out = nestSymbol(out, DocumentSymbol{Name: si.Name, Kind: si.Kind, Detail: si.ContainerName, Range: si.Location.Range, SelectionRange: si.Location.Range})
	}
	return out, nil
}

// nestSymbol puts s into the innermost symbol of list whose range contains it, or appends it.
func nestSymbol(list []DocumentSymbol, s DocumentSymbol) []DocumentSymbol {
	for i := range list {
		if contains(list[i].Range, s.Range) && list[i].Range != s.Range {
			list[i].Children = nestSymbol(list[i].Children, s)
			return list
		}
	}
	return append(list, s)
}

func before(a, b Position) bool {
	return a.Line < b.Line || (a.Line == b.Line && a.Character < b.Character)
}

func contains(outer, inner Range) bool {
	return !before(inner.Start, outer.Start) && !before(outer.End, inner.End)
}

// WorkspaceSymbols sends workspace/symbol with query (an empty query asks for every symbol,
// which some servers refuse to list).
func (c *Client) WorkspaceSymbols(ctx context.Context, query string) ([]SymbolInformation, error) {
	const method = "workspace/symbol"
	if err := c.usable(ctx, method); err != nil {
		return nil, err
	}
	var out []SymbolInformation
	if err := c.Call(ctx, method, map[string]string{"query": query}, &out); err != nil {
		return nil, err
	}
	if out == nil {
		out = []SymbolInformation{}
	}
	return out, nil
}

// Rename sends textDocument/rename: the edit that renames the symbol at pos to newName
// everywhere. It changes nothing by itself: ApplyEdit applies the edit.
func (c *Client) Rename(ctx context.Context, uri string, pos Position, newName string) (WorkspaceEdit, error) {
	const method = "textDocument/rename"
	if err := c.usable(ctx, method); err != nil {
		return WorkspaceEdit{}, err
	}
	if newName == "" {
		return WorkspaceEdit{}, invalidArg("rename", uri, "empty new name")
	}
	p := positionParams(uri, pos)
	p["newName"] = newName
	var edit *WorkspaceEdit
	if err := c.Call(ctx, method, p, &edit); err != nil {
		return WorkspaceEdit{}, err
	}
	if edit == nil {
		return WorkspaceEdit{}, nil
	}
	return *edit, nil
}

// Command is a command a server offers (a code action's, or a code lens's), run with
// workspace/executeCommand.
type Command struct {
	Title     string            `json:"title"`
	Command   string            `json:"command"`
	Arguments []json.RawMessage `json:"arguments,omitempty"`
}

// CodeAction is one action textDocument/codeAction offers: an edit, a command, or both (the
// edit first). A bare Command in the answer becomes a CodeAction with only Command set.
type CodeAction struct {
	Title       string          `json:"title"`
	Kind        string          `json:"kind,omitempty"`
	Diagnostics []Diagnostic    `json:"diagnostics,omitempty"`
	IsPreferred bool            `json:"isPreferred,omitempty"`
	Edit        *WorkspaceEdit  `json:"edit,omitempty"`
	Command     *Command        `json:"command,omitempty"`
	Data        json.RawMessage `json:"data,omitempty"`
}

// CodeActions sends textDocument/codeAction for rng, with the diagnostics the actions may fix
// and, when only is set, the kinds wanted ("quickfix", "source.organizeImports", ...).
func (c *Client) CodeActions(ctx context.Context, uri string, rng Range, diagnostics []Diagnostic, only ...string) ([]CodeAction, error) {
	const method = "textDocument/codeAction"
	if err := c.usable(ctx, method); err != nil {
		return nil, err
	}
	if diagnostics == nil {
		diagnostics = []Diagnostic{}
	}
	cctx := map[string]any{"diagnostics": diagnostics}
	if len(only) > 0 {
		cctx["only"] = only
	}
	var raw []json.RawMessage
	if err := c.Call(ctx, method, map[string]any{"textDocument": map[string]string{"uri": uri}, "range": rng, "context": cctx}, &raw); err != nil {
		return nil, err
	}
	out := make([]CodeAction, 0, len(raw))
	for _, it := range raw {
		var probe struct {
			Command json.RawMessage `json:"command"`
		}
		if err := json.Unmarshal(it, &probe); err != nil {
			return nil, newError(method, "", nil, fmt.Errorf("decode result: %w", err))
		}
		var s string
		if json.Unmarshal(probe.Command, &s) == nil { // a bare Command
			var cmd Command
			if err := json.Unmarshal(it, &cmd); err != nil {
				return nil, newError(method, "", nil, fmt.Errorf("decode result: %w", err))
			}
			out = append(out, CodeAction{Title: cmd.Title, Command: &cmd})
			continue
		}
		var a CodeAction
		if err := json.Unmarshal(it, &a); err != nil {
			return nil, newError(method, "", nil, fmt.Errorf("decode result: %w", err))
		}
		out = append(out, a)
	}
	return out, nil
}

// FormattingOptions are textDocument/formatting's options; TabSize 0 means 4.
type FormattingOptions struct {
	TabSize                int  `json:"tabSize"`
	InsertSpaces           bool `json:"insertSpaces"`
	TrimTrailingWhitespace bool `json:"trimTrailingWhitespace,omitempty"`
	InsertFinalNewline     bool `json:"insertFinalNewline,omitempty"`
	TrimFinalNewlines      bool `json:"trimFinalNewlines,omitempty"`
}

// Formatting sends textDocument/formatting: the edits that format the document. ApplyEdit (as
// a WorkspaceEdit of that one document) or ApplyTextEdits applies them.
func (c *Client) Formatting(ctx context.Context, uri string, opts FormattingOptions) ([]TextEdit, error) {
	const method = "textDocument/formatting"
	if err := c.usable(ctx, method); err != nil {
		return nil, err
	}
	if opts.TabSize == 0 {
		opts.TabSize = 4
	}
	var out []TextEdit
	if err := c.Call(ctx, method, map[string]any{"textDocument": map[string]string{"uri": uri}, "options": opts}, &out); err != nil {
		return nil, err
	}
	if out == nil {
		out = []TextEdit{}
	}
	return out, nil
}

// ByteColumn converts a position in the open document uri (or, when it is not open, in the
// file's text on disk) to a zero-based byte column of its line.
func (c *Client) ByteColumn(uri string, pos Position) (int, error) {
	if c == nil || c.h == nil {
		return 0, invalidArg("byte column", "", "not a Client from Start")
	}
	var text []byte
	if d, ok := c.Document(uri); ok {
		text = []byte(d.Text)
	} else {
		p, err := URIToPath(uri)
		if err != nil {
			return 0, err
		}
		if text, err = ReadDocument(p, c.cfg.MaxFrameBytes); err != nil {
			return 0, newError("byte column", uri, nil, err)
		}
	}
	return CharacterColumn(text, pos, c.PositionEncoding())
}
