package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/subkit/subkit/bash"
	"github.com/subkit/subkit/coderuntime"
	"github.com/subkit/subkit/internal/modelenv"
	"github.com/subkit/subkit/subprocess"
)

const mcpUsage = `usage: subkit mcp [--config FILE] [SANDBOX FLAGS] [--lsp EXT=SERVER [ARGS]]... [--progress DUR]
                  [--http 127.0.0.1:PORT [--token-file FILE] [--session-idle DUR]]
SANDBOX FLAGS: --sandbox [--writable DIR]... [--hidden PATH]... [--no-default-hidden]
                  [--allow-unix-socket PATH]... [--protected PATH]... [--no-default-protected]
                  [--network on|off|allow] [--allow HOST]... [--deny HOST]...

Serves the kit as a Model Context Protocol server: over stdin and stdout (newline-delimited
JSON-RPC, one client) until stdin ends, or with --http over streamable HTTP on a loopback address
at http://ADDR/mcp until subkit is interrupted. Its tools, each with input and output schemas:

  bash                   run one command with the bash executor (as subkit bash); without
                         timeout_ms, one still running after wait_ms (30 s) goes on in the
                         background instead of being killed, and the answer gives its id
  bash_start, bash_read, bash_stop, bash_list
                         background commands, read by whole-stream offsets or as tails
  shell_open, shell_run, shell_write, shell_poll, shell_interrupt, shell_close, shell_list
                         stateful shell sessions on a terminal (as subkit shell)
  code_run               run a snippet of python3, node or bash (as subkit code)
  code_session_open, code_session_run, code_session_restart, code_session_close, code_session_list
                         python3 and node interpreters whose state lasts from cell to cell
  lsp_diagnostics        the diagnostics of files under a root, from a pooled language server
  lsp_definition, lsp_references, lsp_hover, lsp_symbols, lsp_rename
                         navigation at FILE + LINE + COLUMN or a symbol's name, once the server
                         is ready; lsp_rename writes the server's rename to disk
  process_tree           a process and its descendants (default: this server's)
  process_kill           end one process of this server's tree by its pid and start token
                         (TERM, the grace, KILL), refused for any other process (POSIX only)

Each client (an MCP session: the connection over stdio, an Mcp-Session-Id over HTTP) has a world
of its own: its shells, code sessions, background processes and language servers, under random
ids that mean nothing to another client, and limits of its own (maxBackground, 64, background
processes running, 64 shells, 16 code sessions; all clients together four times that). A client
that leaves ends everything it started: at the end of stdin (or when stdout breaks) the calls in
flight are cancelled, the answers still owed are written for at most a second, and the server
exits; over HTTP a DELETE is answered at once and ends the session's processes within the grace,
and so does --session-idle without a request.

--http needs a credential: every request carries "Authorization: Bearer TOKEN", the token of
--token-file (a file only its owner may read), else of SUBKIT_MCP_TOKEN, else a new one the server
writes to a new 0600 file it names on stderr (and removes at exit); without it a request is 401.
A request whose Origin is not the server's own is 403. At most 64 sessions are open at once.

A message is at most 16 MiB (one line over stdio, one request body over HTTP). Over stdio a line
that is not JSON gets a -32700 error, a batch, a duplicated id or a message over the limit a
-32600 error, and the connection goes on.

Every tool runs on one subprocess Service, with a guard on Linux: nothing the server started
outlives it, even when it is killed. The text content of a result is what a model should read
(the bash executor's text for bash), the structured content the same fields as JSON. A bad call
gets a tool error saying what to change. A client that cancels a call ends what the call started;
with a progress token a long call gets a progress notification every --progress.

--config reads the bash executor's configuration (the keys of subkit bash --config, sandbox block
included); its cwd is where commands and shells start and lsp roots are taken from, its
maxTimeoutMs caps every timeout_ms, managedPrefix and allowEnv apply to the whole server.
--sandbox (or the config's sandbox block; the flags win) confines everything the server starts:
commands, shells, code and language servers. --lsp maps a file extension to the language server
lsp_diagnostics starts for such files, e.g. --lsp .go=gopls --lsp '.py=pyright-langserver --stdio'
(a call may name a server of its own instead).

Exit status: 0 once the client has left (stdin ended), 130 when interrupted (the way an --http
server ends), 2 for bad flags or configuration (a token file others may read included), 1 when
the server could not start or serve, or what it started could not all be ended.

flags:
`

// Bounds of the MCP tools' inputs.
const (
	mcpMaxReadBytes   = 1 << 20          // bash_read max_bytes
	mcpMaxBackground  = 256              // a client's background entries kept, running or ended
	mcpMaxCodeSession = 16               // a client's code sessions open at once
	mcpMaxTreeProcs   = 2000             // process_tree entries
	mcpMaxWait        = 10 * time.Minute // the longest wait_ms and settle_ms
	mcpDefaultLspWait = 60 * time.Second
	mcpDefaultSettle  = 500 * time.Millisecond
)

// mcpOptions are the server's settings from the flags.
type mcpOptions struct {
	progress time.Duration
	lsp      map[string][]string // extension (".go") -> server argv
}

// mcpServer holds what every client shares (one Service, the code runtime, the settings) and
// the clients' worlds. The Service is closed once, after every world has ended.
type mcpServer struct {
	opts    mcpOptions
	log     *slog.Logger
	svc     *subprocess.Service
	execCfg bash.Config // each world's executor's, resolved
	code    *coderuntime.Runtime
	cwd     string // the bash executor's: commands, shells and lsp roots start here

	mu       sync.Mutex
	closing  bool
	worlds   map[*mcp.ServerSession]*mcpWorld
	reserved map[string]int // places admit reserved under a ceiling, by what
	failed   []error        // worlds ended before shutdown that could not end everything
	tasks    sync.WaitGroup // watchers of sessions, sessions closing
}

// cmdMcp is `subkit mcp`.
func cmdMcp(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mcp", flag.ContinueOnError)
	var (
		config   = fs.String("config", "", "bash executor configuration file (JSON or YAML)")
		progress = fs.Duration("progress", time.Second, "interval of progress notifications during a long call")
		httpAddr = fs.String("http", "", "serve streamable HTTP on this loopback address (127.0.0.1:PORT) instead of stdio")
		idle     = fs.Duration("session-idle", 30*time.Minute, "with --http: a session with no request for this long is ended, with everything it started")
		tokFile  = fs.String("token-file", "", "with --http: the file holding the bearer token every request must carry (default: "+mcpTokenVar+", else a new token in a new file)")
		lspArgs  stringList
	)
	fs.Var(&lspArgs, "lsp", "EXT=SERVER [ARGS]: the language server for files ending in EXT (repeatable)")
	var sb sandboxFlags
	sb.register(fs)
	fail := func(code int, err error) int {
		fmt.Fprintf(stderr, "subkit mcp: %v\n", err)
		if code == exitUsage {
			fmt.Fprintln(stderr, `run "subkit mcp -h" for usage`)
		}
		return code
	}
	if help, err := parseFlags(fs, args, mcpUsage, stdout); help {
		return 0
	} else if err != nil {
		return fail(exitUsage, err)
	}
	if fs.NArg() > 0 {
		return fail(exitUsage, fmt.Errorf("unexpected arguments %q", fs.Args()))
	}
	if *progress <= 0 {
		return fail(exitUsage, errors.New("--progress must be positive"))
	}
	opts := mcpOptions{progress: *progress, lsp: map[string][]string{}}
	for _, a := range lspArgs {
		ext, argv, err := parseLspArg(a)
		if err != nil {
			return fail(exitUsage, err)
		}
		opts.lsp[ext] = argv
	}
	if *httpAddr != "" {
		if err := checkLoopback(*httpAddr); err != nil {
			return fail(exitUsage, err)
		}
		if *idle <= 0 {
			return fail(exitUsage, errors.New("--session-idle must be positive"))
		}
	} else if *tokFile != "" {
		return fail(exitUsage, errors.New("--token-file is for --http: over stdio the client that started the server is the only one"))
	}
	policy, err := sb.policy(fs)
	if err != nil {
		return fail(exitUsage, err)
	}
	var cfg bash.Config
	if *config != "" {
		if cfg, err = bash.LoadConfig(*config); err != nil {
			return fail(exitUsage, err)
		}
	}
	if policy != nil {
		cfg.Sandbox = policy // the flags win over the file's sandbox block
	}

	var tok mcpToken
	if *httpAddr != "" {
		var usage bool
		if tok, usage, err = loadMcpToken(*tokFile, os.Getenv(mcpTokenVar)); err != nil {
			if usage {
				return fail(exitUsage, err)
			}
			return fail(exitFailure, err)
		}
		if tok.generated != "" {
			defer os.Remove(tok.generated)
			fmt.Fprintf(stderr, "subkit mcp: the bearer token is in %s (new, mode 0600, removed at exit); "+
				"clients send it as the header \"Authorization: Bearer TOKEN\"\n", tok.generated)
		}
	}
	log := slog.New(quietHandler{slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})})
	s, err := newMcpServer(cfg, opts, log)
	if err != nil {
		code := exitFailure
		if errors.Is(err, bash.ErrInvalid) || errors.Is(err, subprocess.ErrInvalid) {
			code = exitUsage
		}
		return fail(code, err)
	}
	defer hurried(ctx, s.svc.Hurry)()       // a second Ctrl-C: what shutdown ends, it kills at once
	defer context.AfterFunc(ctx, s.leave)() // an interrupt cancels the calls in flight at once
	server := s.newServer()
	var serveErr error
	if *httpAddr != "" {
		serveErr = s.serveHTTP(ctx, server, *httpAddr, tok.value, *idle, stderr)
	} else {
		// A client gone while the server writes: the write fails with EPIPE and the server
		// shuts down, instead of dying of SIGPIPE (a handled signal is not inherited by what
		// the server starts, an ignored one would be).
		pipe := make(chan os.Signal, 1)
		signal.Notify(pipe, syscall.SIGPIPE)
		defer signal.Stop(pipe)
		conn := newStdioConn(stdin, stdout, s.leave)
		serveErr = server.Run(ctx, conn)
		if conn.clientLeft() {
			serveErr = nil // the client went away: how a stdio server ends
		}
	}
	shutErr := s.shutdown()
	if shutErr != nil {
		fmt.Fprintf(stderr, "subkit mcp: shutdown: %v\n", shutErr)
	}
	switch {
	case ctx.Err() != nil:
		return exitCancelled
	case serveErr != nil && !errors.Is(serveErr, io.EOF) && !errors.Is(serveErr, mcp.ErrConnectionClosed):
		return fail(exitFailure, serveErr)
	case shutErr != nil:
		return exitFailure
	}
	return 0
}

// parseLspArg parses --lsp EXT=SERVER [ARGS].
func parseLspArg(s string) (ext string, argv []string, err error) {
	ext, cmd, ok := strings.Cut(s, "=")
	argv = strings.Fields(cmd)
	if !ok || ext == "" || len(argv) == 0 {
		return "", nil, fmt.Errorf("--lsp %q: want EXT=SERVER [ARGS], e.g. --lsp .go=gopls", s)
	}
	if !strings.HasPrefix(ext, ".") {
		ext = "." + ext
	}
	return strings.ToLower(ext), argv, nil
}

// checkLoopback refuses an --http address that is not on the loopback interface: the tools
// run commands, and must not be reachable from another machine.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--http %q: want HOST:PORT on loopback, e.g. 127.0.0.1:8765: %v", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("--http %q: only a loopback address (127.0.0.1, ::1, localhost) is served: the tools run commands", addr)
	}
	return nil
}

// newMcpServer makes the Service and what every client shares on it.
func newMcpServer(cfg bash.Config, opts mcpOptions, log *slog.Logger) (*mcpServer, error) {
	prefix := cfg.ManagedPrefix
	if prefix == "" {
		prefix = bash.DefaultManagedPrefix
	}
	sc := serviceConfig()
	sc.ManagedPrefix, sc.AllowEnv, sc.Sandbox, sc.Logger = prefix, cfg.AllowEnv, cfg.Sandbox, log
	svc, err := modelenv.NewService(sc) // the base environment without bash's startup variables
	if err != nil {
		return nil, err
	}
	s := &mcpServer{opts: opts, log: log, svc: svc, worlds: map[*mcp.ServerSession]*mcpWorld{}, reserved: map[string]int{}}
	// The Service carries the environment rules and the sandbox; each world's executor spawns
	// on it. One is made here to check the configuration and resolve its defaults.
	cfg.Service, cfg.AllowEnv, cfg.Sandbox, cfg.Logger = svc, nil, nil, log
	probe, err := bash.New(cfg)
	if err != nil {
		return nil, errors.Join(err, svc.Close())
	}
	s.execCfg = probe.Config()
	s.cwd = s.execCfg.Cwd
	if err := probe.Close(); err != nil {
		return nil, errors.Join(err, svc.Close())
	}
	if s.code, err = coderuntime.New(coderuntime.Config{Service: svc, Logger: log}); err != nil {
		return nil, errors.Join(err, svc.Close())
	}
	return s, nil
}

// leave refuses new calls and starts ending every world: the clients are gone, or the server
// is shutting down.
func (s *mcpServer) leave() {
	s.mu.Lock()
	s.closing = true
	worlds := slices.Collect(maps.Values(s.worlds))
	s.mu.Unlock()
	for _, w := range worlds {
		w.leave()
	}
}

// shutdown ends every world and waits for them, then closes the code runtime and last the
// Service. Errors are joined, those of worlds ended before included.
func (s *mcpServer) shutdown() error {
	s.leave()
	s.mu.Lock()
	worlds := slices.Collect(maps.Values(s.worlds))
	clear(s.worlds)
	s.mu.Unlock()
	var errs []error
	for _, w := range worlds {
		errs = append(errs, w.end())
	}
	s.tasks.Wait() // the sessions have ended: their watchers return
	errs = append(errs, s.failed...)
	return errors.Join(append(errs, s.code.Close(), s.svc.Close())...)
}

// newServer makes the MCP server with every tool.
func (s *mcpServer) newServer() *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "subkit", Title: "subkit: process trees for tools and agents", Version: moduleVersion()},
		&mcp.ServerOptions{
			Logger: s.log,
			Instructions: "subkit runs commands, shells, code and language servers as process trees it owns: " +
				"each call's tree is ended on timeout or cancellation, output is bounded (the whole stream stays in a spill file " +
				"named in the result), and nothing the server started outlives it.",
		})
	server.AddReceivingMiddleware(argumentErrors)
	s.addBashTools(server)
	s.addShellTools(server)
	s.addCodeTools(server)
	s.addLspTools(server)
	s.addTreeTools(server)
	s.addKillTools(server)
	return server
}

// quietHandler drops the SDK's record of an interrupted Run, which reports no failure: it is
// how the server is stopped.
type quietHandler struct{ slog.Handler }

func (h quietHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "server run cancelled" {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h quietHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return quietHandler{h.Handler.WithAttrs(attrs)}
}

func (h quietHandler) WithGroup(name string) slog.Handler {
	return quietHandler{h.Handler.WithGroup(name)}
}

func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}

// mcpHandler is a tool's handler: it runs in the world of the client that called.
type mcpHandler[In, Out any] func(w *mcpWorld, ctx context.Context, req *mcp.CallToolRequest, in In) (string, Out, error)

// addTool registers a typed tool whose schemas come from In and Out (unless t gives them). The
// handler returns the text a model reads and the structured output; an error becomes a tool
// error whose text is the error's message.
func addTool[In, Out any](s *mcpServer, server *mcp.Server, t *mcp.Tool, h mcpHandler[In, Out]) {
	addToolResult(s, server, t, func(w *mcpWorld, ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		text, out, err := h(w, ctx, req, in)
		if err != nil {
			return nil, out, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, out, nil
	})
}

// addToolResult is addTool for a handler that makes the content itself. Every call is
// admitted into its client's world, and a panic is a tool error (and logged), never a
// dropped connection.
func addToolResult[In, Out any](s *mcpServer, server *mcp.Server, t *mcp.Tool,
	h func(w *mcpWorld, ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error)) {
	mcp.AddTool(server, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (res *mcp.CallToolResult, out Out, err error) {
		w, err := s.world(req.Session)
		if err != nil {
			return nil, out, err
		}
		ctx, done, err := w.enter(ctx)
		if err != nil {
			return nil, out, err
		}
		defer done()
		defer func() {
			if r := recover(); r != nil {
				s.log.Error("tool panicked", "tool", t.Name, "panic", r, "stack", string(debug.Stack()))
				var zero Out
				res, out, err = nil, zero, fmt.Errorf("[tool failure: %s failed inside subkit (%v); this is a bug in subkit, not in the call]", t.Name, r)
			}
		}()
		return h(w, ctx, req, in)
	})
}

// progress sends a notifications/progress every opts.progress while a call runs, when the
// client asked for progress (a progress token); the function it returns stops it and waits.
func (s *mcpServer) progress(ctx context.Context, req *mcp.CallToolRequest, what string) (stop func()) {
	if req == nil || req.Params == nil || req.Session == nil {
		return func() {}
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(s.opts.progress)
		defer tick.Stop()
		start := time.Now()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-tick.C:
				elapsed := now.Sub(start)
				p := &mcp.ProgressNotificationParams{ProgressToken: token, Progress: elapsed.Seconds(),
					Message: fmt.Sprintf("%s: running for %v", what, elapsed.Round(100*time.Millisecond))}
				if err := req.Session.NotifyProgress(ctx, p); err != nil {
					s.log.Debug("progress notification", "err", err)
				}
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// millis turns a *_ms input into a duration: 0 is def, a negative value is an error, a value
// above max is an error naming the limit.
func millis(field string, ms int64, def, max time.Duration) (time.Duration, error) {
	switch {
	case ms < 0:
		return 0, fmt.Errorf("%s %d is negative; omit it (or give 0) for the default %v", field, ms, def)
	case ms == 0:
		return def, nil
	case ms > max.Milliseconds():
		return 0, fmt.Errorf("%s %d is above the limit %d (%v)", field, ms, max.Milliseconds(), max)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
