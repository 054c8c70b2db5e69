package lsp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/subkit/subkit/internal/framing"
	"github.com/subkit/subkit/subprocess"
)

// Defaults of Config.ShutdownTimeout and Config.ExitTimeout, which a CLI shows as its flags'
// defaults. Config.Grace and Config.StderrTailBytes default to the Service's
// (subprocess.DefaultGrace, subprocess.DefaultTailBytes).
const (
	DefaultShutdownTimeout = 5 * time.Second
	DefaultExitTimeout     = 10 * time.Second
)

// Defaults of the other zero fields of a Config, as their documentation says.
const (
	defaultMaxFrameBytes     = framing.DefaultMaxSize // 64 MiB
	defaultNotificationQueue = 4096
	defaultUnversionedSettle = 300 * time.Millisecond
	defaultFileEventSettle   = 3 * time.Second
)

// RequestHandler answers a request the server sends to the client. It runs on a goroutine of
// its own; ctx ends when the server cancels the request ($/cancelRequest) or the connection
// ends. It returns the result (marshalled to JSON; nil is null) or an error: a *RPCError is
// sent as is, ctx's error after a cancellation as RequestCancelled, anything else as
// RequestFailed with the error's text.
type RequestHandler func(ctx context.Context, params json.RawMessage) (any, error)

// Config describes a language server to launch and how to talk to it. Zero fields take the
// documented defaults.
type Config struct {
	// Path is the server program, resolved like subprocess.Spec.Path (a bare name is
	// searched in the scrubbed PATH), and Args its arguments.
	Path string
	Args []string
	// Root is the workspace root: the server's working directory, its rootUri and its one
	// workspace folder. Empty means the Service's Cwd; a relative path is taken against it.
	Root string
	// Env entries (NAME=VALUE) are merged over the Service's scrubbed environment.
	Env []string

	// Settings answer workspace/configuration: an item's section is looked up as a key
	// ("gopls"), then as a dotted path through nested maps ("gopls.ui.completion"); a
	// missing section is null. An item without a section gets the whole map.
	Settings map[string]any
	// InitializationOptions is sent as initialize's initializationOptions (omitted when nil).
	InitializationOptions any
	// Capabilities replaces the client capabilities sent in initialize; nil means
	// DefaultCapabilities() (with workspace.applyEdit true when Handlers answers
	// workspace/applyEdit).
	Capabilities json.RawMessage
	// PositionEncodings, when set, are the position encodings offered to the server, in order
	// of preference (general.positionEncodings, and clangd's offsetEncoding); the server picks
	// one and Client.PositionEncoding says which. Nil offers UTF-16 only, the protocol's
	// default. Every Position the client takes or returns (Change ranges, diagnostics,
	// hovers) counts characters in the negotiated encoding; OffsetToPosition and
	// PositionToOffset convert.
	PositionEncodings []PositionEncoding
	// UnversionedSettle is, for a server that publishes diagnostics without a version, how
	// long Diagnostics waits after the server answered its ordering request for a set to
	// arrive, before it takes the last set that arrived since the version was sent (see
	// Client.Diagnostics); 0 means 300ms. Servers that name versions, and
	// pulled diagnostics, do not wait.
	UnversionedSettle time.Duration

	// FileEventSettle is how long Diagnostics waits, after files changed on disk
	// (FilesChanged), for the server to publish again before it takes the set it held from
	// before as still current: a server republishes only the documents whose diagnostics
	// changed (gopls waits its diagnosticsDelay, 1s by default, after a change on disk).
	// 0 means 3s.
	FileEventSettle time.Duration
	// WatchFiles, when set, watches the workspace root for changes on disk (fsnotify: inotify,
	// kqueue, ReadDirectoryChangesW) and sends them with FilesChanged: bursts gathered over
	// 30ms, every directory watched but .git, .hg, .svn, node_modules, __pycache__, .venv
	// and .cache, at most 8192 directories. SyncFiles waits until what the watcher saw has
	// been sent. Without it the server learns of disk changes only from FilesChanged and
	// SyncFiles.
	WatchFiles bool

	// OnNotification receives every notification from the server except $/cancelRequest, in
	// arrival order, on one goroutine of its own: it never runs on the reader, so a slow
	// handler cannot stall replies. It may call the Client. Notifications wait in a queue of
	// NotificationQueue entries; when the handler falls that far behind, new ones are dropped
	// and counted (Client.DroppedNotifications). Diagnostics are stored by the reader
	// before the queue (Client.Diagnostics), so a drop never loses them.
	OnNotification func(method string, params json.RawMessage)
	// NotificationQueue bounds the queue in front of OnNotification, in messages (each at most
	// MaxFrameBytes); 0 means 4096.
	NotificationQueue int
	// Handlers answer server-to-client requests, by method, over the defaults
	// (workspace/configuration, window/workDoneProgress/create, client/registerCapability,
	// client/unregisterCapability, workspace/workspaceFolders, window/showMessageRequest,
	// window/showDocument, the workspace/*/refresh requests, and workspace/applyEdit, which is
	// answered {applied: false, failureReason} because the client applies no edits). A nil
	// entry removes a default; a method without a handler gets MethodNotFound. The client
	// records dynamic registrations (pull diagnostics) before any handler runs.
	Handlers map[string]RequestHandler

	// MaxFrameBytes caps the body of one message from the server; a larger frame fails the
	// connection with ErrFrameTooLarge. 0 means 64 MiB.
	MaxFrameBytes int64
	// StderrTailBytes is how much of the server's stderr is kept in memory (0 means
	// subprocess.DefaultTailBytes); StderrSpillBytes > 0 also keeps the whole stderr, up to
	// that size, in a private spill file.
	StderrTailBytes  int
	StderrSpillBytes int64
	// ShutdownTimeout bounds the wait for the answer to the shutdown request; 0 means
	// DefaultShutdownTimeout (5s). A server that never answers (hung, or reading no input)
	// takes ShutdownTimeout, then Grace for the tree to leave after exit and end of stdin,
	// then Grace between SIGTERM and SIGKILL: 11s with the defaults. One that answers and
	// then hangs takes ExitTimeout and 2 x Grace after the answer. `subkit lsp
	// --shutdown-timeout` sets it.
	ShutdownTimeout time.Duration
	// ExitTimeout is how long Shutdown waits for the server's process to leave after exit
	// when the server acknowledged shutdown: such a server is alive and on its way out, and
	// some take seconds (bash-language-server under load); 0 means DefaultExitTimeout (10s).
	// A value below Grace counts as Grace. A server that did not acknowledge shutdown gets
	// Grace only. `subkit lsp --exit-timeout` sets it.
	ExitTimeout time.Duration
	// Grace is how long Shutdown waits for the rest of the server's tree to leave once the
	// server has (and for a server that did not acknowledge shutdown, for the server itself),
	// and the SIGTERM-to-SIGKILL grace of its termination; 0 means subprocess.DefaultGrace.
	Grace time.Duration
	// Logger receives diagnostics (dropped notifications, unparsable messages); nil: none.
	Logger *slog.Logger
}

// withDefaults checks c and fills its defaults; Root becomes absolute.
func (c Config) withDefaults(svc *subprocess.Service) (Config, error) {
	switch {
	case c.Path == "":
		return c, invalid("Path", "no server program given")
	case c.MaxFrameBytes < 0, c.StderrTailBytes < 0, c.StderrSpillBytes < 0, c.NotificationQueue < 0:
		return c, invalid("MaxFrameBytes/StderrTailBytes/StderrSpillBytes/NotificationQueue", "negative; use 0 for the default")
	case c.ShutdownTimeout < 0, c.Grace < 0, c.UnversionedSettle < 0, c.ExitTimeout < 0, c.FileEventSettle < 0:
		return c, invalid("ShutdownTimeout/ExitTimeout/Grace/UnversionedSettle/FileEventSettle", "negative; use 0 for the default")
	case c.Capabilities != nil && !json.Valid(c.Capabilities):
		return c, invalid("Capabilities", "not valid JSON")
	}
	if c.Root == "" {
		c.Root = svc.Cwd()
	} else if !filepath.IsAbs(c.Root) {
		c.Root = filepath.Join(svc.Cwd(), c.Root)
	}
	c.Root = filepath.Clean(c.Root)
	if fi, err := os.Stat(c.Root); err != nil {
		return c, newError("start", "workspace root "+c.Root, subprocess.ErrNotFound, err)
	} else if !fi.IsDir() {
		return c, invalid("Root", c.Root+" is not a directory")
	}
	if c.MaxFrameBytes == 0 {
		c.MaxFrameBytes = defaultMaxFrameBytes
	}
	if c.NotificationQueue == 0 {
		c.NotificationQueue = defaultNotificationQueue
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.Grace == 0 {
		c.Grace = subprocess.DefaultGrace
	}
	if c.ExitTimeout == 0 {
		c.ExitTimeout = DefaultExitTimeout
	}
	for _, e := range c.PositionEncodings {
		if e == "" || e.check() != nil {
			return c, invalid("PositionEncodings", fmt.Sprintf("%q: want %q, %q or %q", string(e), UTF8, UTF16, UTF32))
		}
	}
	if c.UnversionedSettle == 0 {
		c.UnversionedSettle = defaultUnversionedSettle
	}
	if c.FileEventSettle == 0 {
		c.FileEventSettle = defaultFileEventSettle
	}
	if c.Capabilities == nil {
		c.Capabilities = DefaultCapabilities()
		if c.Handlers["workspace/applyEdit"] != nil {
			c.Capabilities = patchCapabilities(c.Capabilities, []string{"workspace", "applyEdit"}, true)
		}
	}
	if c.PositionEncodings != nil {
		c.Capabilities = patchCapabilities(c.Capabilities, []string{"general", "positionEncodings"}, c.PositionEncodings)
		// clangd's pre-standard form, the only one clangd 14 reads.
		c.Capabilities = patchCapabilities(c.Capabilities, []string{"offsetEncoding"}, c.PositionEncodings)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// patchCapabilities sets the member at path of the capabilities object caps to v (caps is
// valid JSON: withDefaults checked it); objects on the way are created.
func patchCapabilities(caps json.RawMessage, path []string, v any) json.RawMessage {
	var root map[string]any
	if json.Unmarshal(caps, &root) != nil || root == nil {
		root = map[string]any{}
	}
	m := root
	for _, k := range path[:len(path)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
	b, err := json.Marshal(root)
	if err != nil {
		return caps
	}
	return b
}

func invalid(field, msg string) error {
	return invalidArg("start", "Config."+field, msg)
}

// DefaultCapabilities returns the client capabilities sent when Config.Capabilities is nil:
// configuration and workspace folders, dynamic registration of didChangeConfiguration,
// work-done progress, markdown hovers and documentation, published diagnostics with related
// information, versions and tags, pull diagnostics (textDocument/diagnostic, also by dynamic
// registration), watched-file notifications (workspace/didChangeWatchedFiles, registered
// dynamically, relative patterns too), and UTF-16 positions. The client applies no edits by
// default, so applyEdit is false.
func DefaultCapabilities() json.RawMessage {
	return json.RawMessage(`{
  "general": {"positionEncodings": ["utf-16"]},
  "window": {"workDoneProgress": true, "showMessage": {}, "showDocument": {"support": false}},
  "workspace": {
    "applyEdit": false,
    "configuration": true,
    "workspaceFolders": true,
    "didChangeConfiguration": {"dynamicRegistration": true},
    "didChangeWatchedFiles": {"dynamicRegistration": true, "relativePatternSupport": true},
    "symbol": {"dynamicRegistration": false},
    "executeCommand": {"dynamicRegistration": false}
  },
  "textDocument": {
    "synchronization": {"dynamicRegistration": false, "didSave": true, "willSave": false, "willSaveWaitUntil": false},
    "hover": {"dynamicRegistration": false, "contentFormat": ["markdown", "plaintext"]},
    "completion": {"dynamicRegistration": false, "completionItem": {"snippetSupport": false, "documentationFormat": ["markdown", "plaintext"]}},
    "signatureHelp": {"dynamicRegistration": false, "signatureInformation": {"documentationFormat": ["markdown", "plaintext"]}},
    "definition": {"dynamicRegistration": false, "linkSupport": true},
    "typeDefinition": {"dynamicRegistration": false, "linkSupport": true},
    "implementation": {"dynamicRegistration": false, "linkSupport": true},
    "references": {"dynamicRegistration": false},
    "documentSymbol": {"dynamicRegistration": false, "hierarchicalDocumentSymbolSupport": true},
    "codeAction": {"dynamicRegistration": false, "codeActionLiteralSupport": {"codeActionKind": {"valueSet": ["", "quickfix", "refactor", "refactor.extract", "refactor.inline", "refactor.rewrite", "source", "source.organizeImports"]}}},
    "formatting": {"dynamicRegistration": false},
    "rename": {"dynamicRegistration": false, "prepareSupport": true},
    "diagnostic": {"dynamicRegistration": true, "relatedDocumentSupport": false},
    "publishDiagnostics": {"relatedInformation": true, "versionSupport": true, "tagSupport": {"valueSet": [1, 2]}, "codeDescriptionSupport": true, "dataSupport": true}
  }
}`)
}
