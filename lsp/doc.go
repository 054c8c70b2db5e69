// Package lsp launches a language server through a subprocess.Service and speaks the
// Language Server Protocol to it over stdio, from launch to a confirmed-quiet teardown.
//
// Start spawns the server as a process tree of its own (on POSIX, its own process group) with
// stdin and stdout piped, stderr collected as a bounded tail (and, when asked, a bounded spill
// file), the Service's credential-scrubbed environment, and the workspace root as its working
// directory. It then sends initialize (processId is this process, rootUri and the one
// workspace folder are the root, the capabilities are DefaultCapabilities unless the Config
// gives its own) and initialized, and returns a Client holding the server's capabilities and
// serverInfo.
//
// Messages are JSON-RPC 2.0 in Content-Length frames (internal/framing): header names are
// case-insensitive, Content-Type is ignored, and a frame over Config.MaxFrameBytes (64 MiB by
// default) fails the connection with ErrFrameTooLarge instead of being read. One goroutine
// reads, one writes. The reader never waits for a consumer: notifications go to a bounded queue
// served by Config.OnNotification on a goroutine of its own (when it falls behind, new ones
// are dropped and counted), publishDiagnostics is also stored per URI (Diagnostics), and every
// request from the server is answered on a goroutine of its own.
// Requests the server may send before initialize is even answered are handled by default:
// workspace/configuration from Config.Settings, null for window/workDoneProgress/create,
// client/registerCapability, client/unregisterCapability, window/showMessageRequest and the
// workspace/*/refresh requests, {success: false} for window/showDocument, {applied: false,
// failureReason} for workspace/applyEdit, the root for workspace/workspaceFolders,
// MethodNotFound for anything else; Config.Handlers overrides any of them.
//
// Documents: Open, Change, Save and CloseDocument keep each document's text and version in the
// client (versions of a URI never repeat, not even across a close and re-open) and send the
// notifications the server's textDocumentSync asks for: incremental edits as given, or the
// whole resulting text, or nothing. Every Position counts characters in the PositionEncoding
// negotiated at initialize (UTF-16 unless Config.PositionEncodings offered another and the
// server took it); OffsetToPosition, PositionToOffset, PositionIn and CharacterColumn convert.
// Diagnostics are stored with the version they answer (a publish's own version, the version
// current at its arrival when it names none, or the version a pull was sent for); a versioned
// publish older than the set held is stale and dropped. Diagnostics(ctx, uri, version) is the
// one read: it returns a set for that version or a later one, never an older one, by pull
// (textDocument/diagnostic, offered statically or registered dynamically) or by waiting for a
// publish; with NoWait it returns the set held now, or ErrNoDiagnostics. Version 0 asks for
// any set. AllDiagnostics is a snapshot of every set held. A set published
// without a version is ordered against a request that needs the current text
// (DiagnosticSet.Ordered), and a text identical to one already answered, nothing else having
// changed, is answered from that answer (DiagnosticSet.Reused); Client.Diagnostics says which
// guarantee each kind of server gets. WaitQuiet waits until nothing has been published for a
// while. A file is opened by reading it with ReadDocument (regular files only, size capped)
// and passing its FileURI to Open.
//
// Files on disk: FilesChanged tells the server what changed (workspace/didChangeWatchedFiles,
// filtered by the watchers the server registered) and brings the open documents it names in
// line with the disk (sent again when their text differs, closed when their file is gone);
// Config.WatchFiles feeds it from a watcher of the root (fsnotify), and SyncFiles, before a
// question, waits until what the watcher saw is sent and compares every open document with
// its file. A set of diagnostics held from before such a notification is not taken as current
// until the server has republished, or stayed quiet for Config.FileEventSettle after a request
// sent since.
//
// Navigation and edits are typed: Definition, Declaration, TypeDefinition, Implementation,
// References (LocationLinks normalised to Locations), Hover, Completion, DocumentSymbols (the
// flat form nested by range), WorkspaceSymbols, Rename (a WorkspaceEdit), CodeActions and
// Formatting; Client.ByteColumn turns a position into a byte column. WaitReady waits until a
// server has diagnosed a document and ended its work-done progress: a server still loading
// answers references with what it has seen so far. ApplyEdit applies a WorkspaceEdit to the
// files under the root and to the open documents (versions checked, the whole edit checked
// before anything is written, creates, renames and deletes too), and ApplyEditHandler plugs
// it into Config.Handlers for workspace/applyEdit.
//
// Pool keeps servers keyed by (command, root), shared by its callers, restarts a crashed one
// with back-off (its open documents re-opened on the new server with their versions and texts;
// Server.Client returns the Client of the process running now),
// gives up with a *RestartLimitError after PoolConfig.MaxRestarts restarts within
// PoolConfig.RestartWindow, ends one server on request (Evict) or once it has been idle for
// PoolConfig.IdleTimeout, and shuts them all down at once. Start and NewPool take the
// caller's *subprocess.Service and never close it.
//
// Errors say what failed in one shape (an *Error: "lsp: op name: kind: cause (hint)", or a
// *ServerExitError, *ConnError, *RPCError, *EditError, *RestartLimitError) and wrap a sentinel
// of this package or of subprocess: a bad argument wraps subprocess.ErrInvalid, and ErrClosed
// (a Client or a Pool shut down) matches subprocess.ErrClosed too.
//
// Call takes a context: when it ends first, the client sends $/cancelRequest and returns. When
// the server dies, every pending call fails at once with a *ServerExitError carrying its exit
// code or signal and the tail of its stderr, Done is closed and Err returns the same error. When
// the server writes something that is not a frame to its stdout, or a frame over the cap,
// pending calls fail at once with a *ConnError, and the client terminates the server.
//
// Shutdown sends shutdown (its answer awaited up to Config.ShutdownTimeout) and exit, closes
// stdin, waits up to Config.ExitTimeout for a server that acknowledged shutdown to leave (the
// grace for one that did not) and up to Config.Grace for the rest of its tree, then terminates
// what is left (SIGTERM, grace, SIGKILL), and reports how the server ended (clean, terminated,
// killed, crashed), its exit status and its stderr. Once exit is sent, output cut short (a
// frame's header without its body) is the server leaving, not a connection failure. It returns only once no process of the tree and no goroutine of the
// Client is left. Shutdown and Close are safe to call more than once.
package lsp
