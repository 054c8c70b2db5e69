package lsp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The few LSP types the Client's helpers use. Anything else goes through Call and Notify with
// the caller's own types.

// Position is a zero-based line and a zero-based character offset in UTF-16 code units (the
// LSP default position encoding).
type Position struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

// Range is a half-open range of positions.
type Range struct {
	Start Position `json:"start"`
	End   Position `json:"end"`
}

// Location is a range in a document.
type Location struct {
	URI   string `json:"uri"`
	Range Range  `json:"range"`
}

// DiagnosticSeverity is 1 (error) to 4 (hint).
type DiagnosticSeverity int

const (
	SeverityError       DiagnosticSeverity = 1
	SeverityWarning     DiagnosticSeverity = 2
	SeverityInformation DiagnosticSeverity = 3
	SeverityHint        DiagnosticSeverity = 4
)

func (s DiagnosticSeverity) String() string {
	switch s {
	case SeverityError:
		return "error"
	case SeverityWarning:
		return "warning"
	case SeverityInformation:
		return "information"
	case SeverityHint:
		return "hint"
	}
	return fmt.Sprintf("severity %d", int(s))
}

// Diagnostic is one entry of textDocument/publishDiagnostics.
type Diagnostic struct {
	Range              Range              `json:"range"`
	Severity           DiagnosticSeverity `json:"severity,omitempty"`
	Code               json.RawMessage    `json:"code,omitempty"`
	CodeDescription    json.RawMessage    `json:"codeDescription,omitempty"`
	Source             string             `json:"source,omitempty"`
	Message            string             `json:"message"`
	Tags               []int              `json:"tags,omitempty"`
	RelatedInformation []struct {
		Location Location `json:"location"`
		Message  string   `json:"message"`
	} `json:"relatedInformation,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}

// ServerInfo names a server (or, in initialize, the client).
type ServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version,omitempty"`
}

// InitializeResult is the server's answer to initialize.
type InitializeResult struct {
	Capabilities json.RawMessage `json:"capabilities"`
	ServerInfo   *ServerInfo     `json:"serverInfo,omitempty"`
}

// WorkspaceFolder is a root the server works on.
type WorkspaceFolder struct {
	URI  string `json:"uri"`
	Name string `json:"name"`
}

// TextDocumentItem is a document as opened by textDocument/didOpen.
type TextDocumentItem struct {
	URI        string `json:"uri"`
	LanguageID string `json:"languageId"`
	Version    int    `json:"version"`
	Text       string `json:"text"`
}

// Hover is the answer to textDocument/hover. Contents is MarkupContent, a MarkedString or an
// array of MarkedStrings, as the server sent it; Text flattens it.
type Hover struct {
	Contents json.RawMessage `json:"contents"`
	Range    *Range          `json:"range,omitempty"`
}

// Text returns the hover's contents as text (markdown or plain, as the server wrote it);
// several parts are joined by a blank line.
func (h *Hover) Text() string {
	if h == nil {
		return ""
	}
	return markedText(h.Contents)
}

func markedText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []json.RawMessage
	if json.Unmarshal(raw, &parts) == nil {
		var out []string
		for _, p := range parts {
			if t := markedText(p); t != "" {
				out = append(out, t)
			}
		}
		return strings.Join(out, "\n\n")
	}
	var obj struct {
		Value string `json:"value"`
	}
	json.Unmarshal(raw, &obj)
	return obj.Value
}

// DidOpen sends textDocument/didOpen.
func (c *Client) DidOpen(ctx context.Context, doc TextDocumentItem) error {
	return c.Notify(ctx, "textDocument/didOpen", map[string]any{"textDocument": doc})
}

// OpenFile reads the file at path (relative paths are taken against the workspace root),
// opens it with version 1 and the language id LanguageID gives, and returns its URI.
func (c *Client) OpenFile(ctx context.Context, path string) (string, error) {
	if !filepath.IsAbs(path) {
		path = filepath.Join(c.cfg.Root, path)
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("lsp: open %s: %w", path, err)
	}
	uri := FileURI(path)
	return uri, c.DidOpen(ctx, TextDocumentItem{URI: uri, LanguageID: LanguageID(path), Version: 1, Text: string(text)})
}

// Hover sends textDocument/hover; a server with nothing to say gives (nil, nil).
func (c *Client) Hover(ctx context.Context, uri string, pos Position) (*Hover, error) {
	var h *Hover
	err := c.Call(ctx, "textDocument/hover", map[string]any{
		"textDocument": map[string]string{"uri": uri}, "position": pos,
	}, &h)
	return h, err
}

func (c *Client) storeDiagnostics(params json.RawMessage) {
	var p struct {
		URI         string       `json:"uri"`
		Diagnostics []Diagnostic `json:"diagnostics"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.URI == "" {
		c.log.Warn("lsp: ignoring unreadable textDocument/publishDiagnostics", "err", err)
		return
	}
	if p.Diagnostics == nil {
		p.Diagnostics = []Diagnostic{}
	}
	c.diagMu.Lock()
	c.diags[p.URI] = p.Diagnostics
	close(c.diagsChanged)
	c.diagsChanged = make(chan struct{})
	c.diagMu.Unlock()
}

// Diagnostics returns the diagnostics the server last published for uri, and whether it has
// published any for it.
func (c *Client) Diagnostics(uri string) ([]Diagnostic, bool) {
	c.diagMu.Lock()
	defer c.diagMu.Unlock()
	d, ok := c.diags[uri]
	return slices.Clone(d), ok
}

// AllDiagnostics returns the last published diagnostics of every URI the server published
// for (an empty list when it cleared them).
func (c *Client) AllDiagnostics() map[string][]Diagnostic {
	c.diagMu.Lock()
	defer c.diagMu.Unlock()
	out := make(map[string][]Diagnostic, len(c.diags))
	for u, d := range c.diags {
		out[u] = slices.Clone(d)
	}
	return out
}

// WaitDiagnostics waits until the diagnostics last published for uri satisfy ok (nil: any
// publication), and returns them. It fails with ctx's error, or with the connection's error
// when the server ends first.
func (c *Client) WaitDiagnostics(ctx context.Context, uri string, ok func([]Diagnostic) bool) ([]Diagnostic, error) {
	for {
		c.diagMu.Lock()
		d, have := c.diags[uri]
		changed := c.diagsChanged
		c.diagMu.Unlock()
		if have && (ok == nil || ok(d)) {
			return slices.Clone(d), nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("lsp: waiting for diagnostics of %s: %w", uri, ctx.Err())
		case <-c.done:
			if d, have := c.Diagnostics(uri); have && (ok == nil || ok(d)) {
				return d, nil
			}
			return nil, c.final
		}
	}
}

// FileURI returns the file:// URI of an absolute path.
func FileURI(path string) string {
	p := filepath.ToSlash(path)
	if !strings.HasPrefix(p, "/") { // a Windows drive letter
		p = "/" + p
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// URIToPath returns the local path of a file:// URI.
func URIToPath(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", fmt.Errorf("lsp: %w", err)
	}
	if u.Scheme != "file" {
		return "", fmt.Errorf("lsp: %q is not a file URI", uri)
	}
	p := u.Path
	if runtime.GOOS == "windows" && len(p) >= 3 && p[0] == '/' && p[2] == ':' {
		p = p[1:]
	}
	return filepath.FromSlash(p), nil
}

// LanguageID guesses the LSP language identifier of a file from its name.
func LanguageID(path string) string {
	switch base := filepath.Base(path); base {
	case "go.mod", "go.sum", "go.work":
		return base
	case "Makefile", "makefile", "GNUmakefile":
		return "makefile"
	case "Dockerfile":
		return "dockerfile"
	}
	ext := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	switch ext {
	case "":
		return "plaintext"
	case "py":
		return "python"
	case "js", "mjs", "cjs":
		return "javascript"
	case "jsx":
		return "javascriptreact"
	case "ts", "mts", "cts":
		return "typescript"
	case "tsx":
		return "typescriptreact"
	case "rs":
		return "rust"
	case "h":
		return "c"
	case "cc", "cxx", "hpp", "hh", "hxx":
		return "cpp"
	case "rb":
		return "ruby"
	case "sh", "bash":
		return "shellscript"
	case "md":
		return "markdown"
	case "yml":
		return "yaml"
	case "cs":
		return "csharp"
	case "kt", "kts":
		return "kotlin"
	}
	return ext
}

// ErrPosition is wrapped by PositionFor's errors.
var ErrPosition = errors.New("lsp: position outside the text")

// PositionFor converts a 1-based line and 1-based byte column (as compilers print them) in
// text to an LSP Position (UTF-16 characters). col may be one past the end of the line.
func PositionFor(text []byte, line, col int) (Position, error) {
	if line < 1 || col < 1 {
		return Position{}, fmt.Errorf("%w: line %d, column %d: both start at 1", ErrPosition, line, col)
	}
	rest := text
	for i := 1; i < line; i++ {
		j := bytes.IndexByte(rest, '\n')
		if j < 0 {
			return Position{}, fmt.Errorf("%w: line %d of %d", ErrPosition, line, i)
		}
		rest = rest[j+1:]
	}
	if j := bytes.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	rest = bytes.TrimSuffix(rest, []byte("\r"))
	if col-1 > len(rest) {
		return Position{}, fmt.Errorf("%w: column %d of line %d, which has %d bytes", ErrPosition, col, line, len(rest))
	}
	prefix, char := rest[:col-1], 0
	for len(prefix) > 0 {
		r, n := utf8.DecodeRune(prefix)
		prefix = prefix[n:]
		if n := utf16.RuneLen(r); n > 0 {
			char += n
		} else {
			char++
		}
	}
	return Position{Line: line - 1, Character: char}, nil
}
