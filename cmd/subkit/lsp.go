package main

import (
	"bytes"
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
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/subkit/subkit/lsp"
	"github.com/subkit/subkit/subprocess"
)

const lspUsage = `usage: subkit lsp [--root DIR] [--open FILE]... [--hover FILE:LINE:COL] [--wait DUR]
                  [--settings JSON] [--timeout DUR] [--grace DUR] [--json] -- SERVER [ARGS...]

Launches SERVER as a language server over stdio, in a process tree of its own with the root as
its working directory, stdin/stdout piped and stderr kept as a bounded tail. It runs the
initialize handshake, opens each --open file (and the --hover file), waits for diagnostics,
asks for the hover, then shuts the server down: shutdown, exit, end of stdin, the grace, then
SIGTERM and SIGKILL to whatever is left of its tree.

LINE and COL start at 1 and COL counts bytes, as compilers print positions. --wait bounds the
wait for diagnostics (it ends earlier once every opened file has some and none has changed for
500ms). --settings is a JSON object that answers workspace/configuration by section, e.g.
'{"gopls":{"staticcheck":true}}'. --timeout bounds the whole session before the shutdown.

With --json it prints one JSON object:
  {"server_info":{"name","version"},"capabilities":{...},
   "diagnostics":[{"uri","range","severity","message",...}],"hover":{"contents","range"}|null,
   "shutdown":"clean"|"terminated"|"killed"|"crashed","stderr_tail":"..."}
with "error":{"kind","message"} added when a step failed. Without it, it prints the diagnostics
as FILE:LINE:COL: SEVERITY: MESSAGE, the hover text and how the server ended; the stderr tail
goes to stderr when the server did not end cleanly.

Exit status: 0 when every step worked (diagnostics do not change it); 1 when a step failed or
the server crashed; 130 when interrupted; 127 when SERVER is not found, 126 when it cannot be
executed, 2 for bad flags, each with {"error":{"kind","message"}} under --json.

flags:
`

// settleDiagnostics is how long diagnostics must rest before subkit lsp stops waiting.
const settleDiagnostics = 500 * time.Millisecond

type lspOutput struct {
	ServerInfo   *lsp.ServerInfo `json:"server_info"`
	Capabilities json.RawMessage `json:"capabilities"`
	Diagnostics  []lspDiagnostic `json:"diagnostics"`
	Hover        *lsp.Hover      `json:"hover"`
	Shutdown     string          `json:"shutdown"`
	StderrTail   string          `json:"stderr_tail"`
	Error        *lspError       `json:"error,omitempty"`
	escaped      int             // processes outside the server's group that Shutdown ended
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

// cmdLsp is `subkit lsp`.
func cmdLsp(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lsp", flag.ContinueOnError)
	var (
		root     = fs.String("root", ".", "workspace root: the server's working directory and rootUri")
		opens    stringList
		hoverArg = fs.String("hover", "", "FILE:LINE:COL to ask a hover for (the file is opened)")
		wait     = fs.Duration("wait", 10*time.Second, "longest wait for diagnostics of the opened files")
		settings = fs.String("settings", "", "JSON object answering workspace/configuration by section")
		timeout  = fs.Duration("timeout", 2*time.Minute, "bound of the whole session before the shutdown")
		grace    = fs.Duration("grace", subprocess.DefaultGrace, "wait for the server to exit, and between SIGTERM and SIGKILL")
		asJSON   = fs.Bool("json", false, "print one JSON object")
	)
	fs.Var(&opens, "open", "file to open with textDocument/didOpen (repeatable)")
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
	var cfgSettings map[string]any
	if *settings != "" {
		if err := json.Unmarshal([]byte(*settings), &cfgSettings); err != nil {
			return fail("invalid", exitUsage, fmt.Errorf("--settings: want a JSON object: %w", err))
		}
	}
	switch {
	case fs.NArg() == 0:
		return fail("invalid", exitUsage, errors.New("no server given: subkit lsp [flags] -- SERVER [ARGS...]"))
	case *wait < 0 || *timeout <= 0 || *grace <= 0:
		return fail("invalid", exitUsage, errors.New("--wait must not be negative; --timeout and --grace must be positive"))
	}

	svc, err := subprocess.New(serviceConfig())
	if err != nil {
		return fail("internal", exitFailure, err)
	}
	defer svc.Close()

	var mu sync.Mutex
	var lastPublish time.Time
	session, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	c, err := lsp.Start(session, svc, lsp.Config{
		Path: fs.Arg(0), Args: fs.Args()[1:], Root: *root, Settings: cfgSettings, Grace: *grace,
		OnNotification: func(method string, _ json.RawMessage) {
			if method == "textDocument/publishDiagnostics" {
				mu.Lock()
				lastPublish = time.Now()
				mu.Unlock()
			}
		},
	})
	if err != nil {
		if kind, code := startFailure(err); kind != "internal" {
			return fail(kind, code, err)
		}
		out := lspOutput{Diagnostics: []lspDiagnostic{}, Error: lspFailure(ctx, err)}
		var exit *lsp.ServerExitError
		if errors.As(err, &exit) {
			out.Shutdown = lsp.EndedCrashed.String()
			if exit.Cause != nil {
				out.Shutdown = lsp.EndedTerminated.String()
			}
			out.StderrTail = streamJSON(subprocess.StreamResult{Tail: exit.Stderr, Truncated: exit.StderrTruncated}).Tail
		}
		return printLsp(stdout, stderr, *asJSON, out, nil)
	}
	defer c.Close()

	out := lspOutput{ServerInfo: c.InitializeResult().ServerInfo, Capabilities: c.InitializeResult().Capabilities}
	texts := map[string][]byte{} // by URI, for positions
	var stepErr error
	open := func(file string) (string, error) {
		path, err := filepath.Abs(file)
		if err != nil {
			return "", err
		}
		uri := lsp.FileURI(path)
		if _, ok := texts[uri]; ok {
			return uri, nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return "", err
		}
		texts[uri] = text
		return uri, c.DidOpen(session, lsp.TextDocumentItem{URI: uri, LanguageID: lsp.LanguageID(path), Version: 1, Text: string(text)})
	}
	var opened []string
	files := slices.Clone([]string(opens))
	if hoverAt != nil {
		files = append(files, hoverAt.file)
	}
	for _, f := range files {
		uri, err := open(f)
		if err != nil {
			stepErr = fmt.Errorf("open %s: %w", f, err)
			break
		}
		opened = append(opened, uri)
	}
	if stepErr == nil && hoverAt != nil {
		uri := opened[len(opened)-1]
		pos, err := lsp.PositionFor(texts[uri], hoverAt.line, hoverAt.col)
		if err == nil {
			out.Hover, err = c.Hover(session, uri, pos)
		}
		if err != nil {
			stepErr = fmt.Errorf("hover %s: %w", *hoverArg, err)
		}
	}
	if stepErr == nil && len(opened) > 0 {
		waitLspDiagnostics(session, c, opened, *wait, func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return lastPublish
		})
	}

	// Before the shutdown: servers clear their diagnostics when their session ends.
	out.Diagnostics = lspDiagnostics(c.AllDiagnostics())

	// Shut down with a context of its own: an interrupt must still end the server.
	shutCtx, cancelShut := context.WithTimeout(context.Background(), lsp.DefaultShutdownTimeout+4*(*grace)+15*time.Second)
	defer cancelShut()
	exit, shutErr := c.Shutdown(shutCtx)
	out.Shutdown, out.escaped = exit.Ended.String(), exit.Escaped
	out.StderrTail = streamJSON(exit.Stderr).Tail
	if stepErr == nil && exit.Ended == lsp.EndedCrashed {
		stepErr = c.Err()
	}
	if stepErr == nil {
		stepErr = shutErr
	}
	if stepErr != nil {
		out.Error = lspFailure(ctx, stepErr)
	}
	return printLsp(stdout, stderr, *asJSON, out, texts)
}

// lspFailure classifies a failed step.
func lspFailure(ctx context.Context, err error) *lspError {
	var exit *lsp.ServerExitError
	kind := "failed"
	switch {
	case ctx.Err() != nil:
		kind = "interrupted"
	case errors.Is(err, context.DeadlineExceeded):
		kind = "timeout"
	case errors.As(err, &exit) && exit.Cause == nil:
		kind = "server_exited"
	case errors.Is(err, lsp.ErrFrameTooLarge), errors.Is(err, lsp.ErrMalformedFrame):
		kind = "protocol"
	}
	return &lspError{Kind: kind, Message: err.Error()}
}

// waitLspDiagnostics waits until every opened URI has diagnostics and none has been published
// for settleDiagnostics, or until wait has passed.
func waitLspDiagnostics(ctx context.Context, c *lsp.Client, uris []string, wait time.Duration, last func() time.Time) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for _, u := range uris {
		if _, err := c.WaitDiagnostics(ctx, u, nil); err != nil {
			return
		}
	}
	for {
		rest := settleDiagnostics - time.Since(last())
		if rest <= 0 {
			return
		}
		select {
		case <-time.After(rest):
		case <-ctx.Done():
			return
		case <-c.Done():
			return
		}
	}
}

func lspDiagnostics(all map[string][]lsp.Diagnostic) []lspDiagnostic {
	out := []lspDiagnostic{}
	for uri, ds := range all {
		for _, d := range ds {
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
		code = exitFailure
		if out.Error.Kind == "interrupted" {
			code = exitSignalShift + 2
		}
	}
	if asJSON {
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
	for _, d := range out.Diagnostics {
		file := d.URI
		if p, err := lsp.URIToPath(d.URI); err == nil {
			file = p
		}
		text, ok := texts[d.URI]
		if !ok {
			text, _ = os.ReadFile(file)
		}
		src := ""
		if d.Source != "" {
			src = " [" + d.Source + "]"
		}
		fmt.Fprintf(stdout, "%s:%d:%d: %v: %s%s\n", file, d.Range.Start.Line+1,
			byteColumn(text, d.Range.Start)+1, d.Severity, d.Message, src)
	}
	if out.Hover != nil {
		fmt.Fprintf(stdout, "hover:\n%s\n", out.Hover.Text())
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

// byteColumn turns an LSP position (UTF-16 characters) into a zero-based byte column of its
// line in text; without the text it returns the character offset.
func byteColumn(text []byte, p lsp.Position) int {
	lines := bytes.SplitN(text, []byte("\n"), p.Line+2)
	if p.Line >= len(lines) {
		return p.Character
	}
	line, units, col := lines[p.Line], 0, 0
	for col < len(line) && units < p.Character {
		r, n := utf8.DecodeRune(line[col:])
		units += max(utf16.RuneLen(r), 1)
		col += n
	}
	return col
}
