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

// Defaults applied to zero fields of a Config.
const (
	DefaultMaxFrameBytes     = framing.DefaultMaxSize // 64 MiB
	DefaultShutdownTimeout   = 5 * time.Second
	DefaultNotificationQueue = 4096
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
	// DefaultCapabilities().
	Capabilities json.RawMessage

	// OnNotification receives every notification from the server except $/cancelRequest, in
	// arrival order, on one goroutine of its own: it never runs on the reader, so a slow
	// handler cannot stall replies. It may call the Client. Notifications wait in a queue of
	// NotificationQueue entries; when the handler falls that far behind, new ones are dropped
	// and counted (Client.DroppedNotifications). Diagnostics are stored by the reader
	// before the queue (Client.Diagnostics), so a drop never loses them.
	OnNotification func(method string, params json.RawMessage)
	// NotificationQueue bounds the queue in front of OnNotification, in messages (each at most
	// MaxFrameBytes); 0 means DefaultNotificationQueue.
	NotificationQueue int
	// Handlers answer server-to-client requests, by method, over the defaults
	// (workspace/configuration, window/workDoneProgress/create, client/registerCapability,
	// client/unregisterCapability, workspace/workspaceFolders, window/showMessageRequest).
	// A nil entry removes a default; a method without a handler gets MethodNotFound.
	Handlers map[string]RequestHandler

	// MaxFrameBytes caps the body of one message from the server; a larger frame fails the
	// connection with ErrFrameTooLarge. 0 means DefaultMaxFrameBytes.
	MaxFrameBytes int64
	// StderrTailBytes is how much of the server's stderr is kept in memory (0 means
	// subprocess.DefaultTailBytes); StderrSpillBytes > 0 also keeps the whole stderr, up to
	// that size, in a private spill file.
	StderrTailBytes  int
	StderrSpillBytes int64
	// ShutdownTimeout bounds the shutdown request; 0 means DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// Grace is how long Shutdown waits for the server to leave after exit, and the
	// SIGTERM-to-SIGKILL grace of its termination; 0 means subprocess.DefaultGrace.
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
	case c.ShutdownTimeout < 0, c.Grace < 0:
		return c, invalid("ShutdownTimeout/Grace", "negative; use 0 for the default")
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
		return c, fmt.Errorf("lsp: workspace root: %w (%w)", err, subprocess.ErrNotFound)
	} else if !fi.IsDir() {
		return c, invalid("Root", c.Root+" is not a directory")
	}
	if c.MaxFrameBytes == 0 {
		c.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if c.NotificationQueue == 0 {
		c.NotificationQueue = DefaultNotificationQueue
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.Grace == 0 {
		c.Grace = subprocess.DefaultGrace
	}
	if c.Capabilities == nil {
		c.Capabilities = DefaultCapabilities()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

func invalid(field, msg string) error {
	return fmt.Errorf("lsp: Config.%s: %s (%w)", field, msg, subprocess.ErrInvalid)
}

// DefaultCapabilities returns the client capabilities sent when Config.Capabilities is nil:
// configuration and workspace folders, dynamic registration of didChangeConfiguration,
// work-done progress, markdown hovers and documentation, diagnostics with related
// information, versions and tags, and UTF-16 positions. The client never applies edits, so
// applyEdit is false.
func DefaultCapabilities() json.RawMessage {
	return json.RawMessage(`{
  "general": {"positionEncodings": ["utf-16"]},
  "window": {"workDoneProgress": true, "showMessage": {}, "showDocument": {"support": false}},
  "workspace": {
    "applyEdit": false,
    "configuration": true,
    "workspaceFolders": true,
    "didChangeConfiguration": {"dynamicRegistration": true},
    "didChangeWatchedFiles": {"dynamicRegistration": false},
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
    "publishDiagnostics": {"relatedInformation": true, "versionSupport": true, "tagSupport": {"valueSet": [1, 2]}, "codeDescriptionSupport": true, "dataSupport": true}
  }
}`)
}
