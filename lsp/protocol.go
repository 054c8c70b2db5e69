package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/subkit/subkit/subprocess"
)

// The LSP types of the Client's documents, diagnostics and hovers (navigation.go and edit.go
// have those of navigation and edits). Anything else goes through Call and Notify with the
// caller's own types.

// Position is a zero-based line and a zero-based character offset in the units of the
// negotiated PositionEncoding (UTF-16 code units unless the server chose another).
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

// Hover sends textDocument/hover; a server with nothing to say gives (nil, nil). pos counts
// characters in the negotiated PositionEncoding.
func (c *Client) Hover(ctx context.Context, uri string, pos Position) (*Hover, error) {
	if err := c.usable(ctx, "textDocument/hover"); err != nil {
		return nil, err
	}
	var h *Hover
	err := c.Call(ctx, "textDocument/hover", map[string]any{
		"textDocument": map[string]string{"uri": uri}, "position": pos,
	}, &h)
	return h, err
}

// FileURI returns the file:// URI of an absolute path: file:///C:/dir/x.go for a Windows drive
// path, file://server/share/x.go for a UNC path (\\server\share\x.go).
func FileURI(path string) string {
	p := filepath.ToSlash(path)
	if host, rest, ok := strings.Cut(strings.TrimPrefix(p, "//"), "/"); ok && strings.HasPrefix(p, "//") && host != "" {
		return (&url.URL{Scheme: "file", Host: host, Path: "/" + rest}).String()
	}
	if !strings.HasPrefix(p, "/") { // a Windows drive letter
		p = "/" + p
	}
	return (&url.URL{Scheme: "file", Path: p}).String()
}

// URIToPath returns the local path of a file:// URI. On Windows a drive letter comes back
// upper-case whatever the URI's case or escaping (file:///c%3A/x is C:\x), and a URI with a
// host is a UNC path; elsewhere a host other than localhost is an error.
func URIToPath(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", newError("uri to path", uri, subprocess.ErrInvalid, err)
	}
	if u.Scheme != "file" {
		return "", invalidArg("uri to path", uri, "not a file URI")
	}
	p := u.Path
	if u.Host != "" && u.Host != "localhost" {
		if runtime.GOOS != "windows" {
			return "", invalidArg("uri to path", uri, "a file URI with a host (a UNC path) names no local file here")
		}
		return `\\` + u.Host + filepath.FromSlash(p), nil
	}
	if runtime.GOOS == "windows" && len(p) >= 3 && p[0] == '/' && p[2] == ':' {
		p = strings.ToUpper(p[1:2]) + p[2:]
	}
	return filepath.FromSlash(p), nil
}

// sameFile reports whether two file URIs name the same file although their text differs: a
// server may escape differently (%3A, %20) or, on Windows, change a drive letter's or a
// name's case.
func sameFile(a, b string) bool {
	pa, errA := URIToPath(a)
	pb, errB := URIToPath(b)
	if errA != nil || errB != nil {
		return false
	}
	if runtime.GOOS == "windows" {
		return strings.EqualFold(pa, pb)
	}
	return pa == pb
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

// ErrPosition is wrapped by the errors of the position helpers (PositionFor, PositionIn,
// OffsetToPosition, PositionToOffset, CharacterColumn) and of a Change whose range is not in
// the document.
var ErrPosition = errors.New("position outside the text")

// PositionFor converts a 1-based line and 1-based byte column (as compilers print them) in
// text to an LSP Position in UTF-16 units (the protocol's default encoding; PositionIn takes
// the encoding, Client.PositionEncoding says which one the server negotiated). col may be one
// past the end of the line.
func PositionFor(text []byte, line, col int) (Position, error) {
	return PositionIn(text, line, col, UTF16)
}
