package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/subkit/subkit/internal/framing"
	"github.com/subkit/subkit/subprocess"
)

// readDrain is how long the reader may go on after the server's leader has exited while a
// descendant still holds its stdout: long enough to read what the server wrote before it
// exited, short enough that pending calls fail promptly.
const readDrain = 250 * time.Millisecond

// cancelQueue bounds the $/cancelRequest notifications waiting for the writer; beyond it
// they are dropped (cancellation is advisory).
const cancelQueue = 64

// Client is a connection to one language server process. All methods are safe for
// concurrent use.
type Client struct {
	cfg      Config
	name     string
	h        *subprocess.Handle
	log      *slog.Logger
	stdin    io.WriteCloser
	stdout   io.ReadCloser
	fr       *framing.Reader
	fw       *framing.Writer
	handlers map[string]RequestHandler
	init     InitializeResult

	nextID  atomic.Int64
	out     chan outgoing     // to the writer
	cancels chan int64        // $/cancelRequest ids, to the writer
	notes   chan notification // to the dispatcher; nil without OnNotification
	dropped atomic.Uint64

	mu         sync.Mutex
	pending    map[int64]chan reply
	failed     error // once set, new calls fail with it
	closing    bool  // Shutdown has begun
	crashed    bool  // the server ended the connection before Shutdown began
	cut        bool  // the client closed stdout itself
	serverReqs map[string]context.CancelFunc

	diagMu       sync.Mutex
	diags        map[string]DiagnosticSet
	diagsChanged chan struct{}       // closed and replaced on every publish, pulled set or progress
	lastPublish  time.Time           // arrival of the last publishDiagnostics, for WaitQuiet
	pubSeq       uint64              // publishes received so far: the arrival order of sets
	progress     map[string]bool     // work-done progress begun and not ended, by token
	progressSeen bool                // the server has reported work-done progress at all
	answers      map[string][]answer // per URI, the last sets answered for known texts
	gen          uint64              // counts every document change and file event
	fileGen      uint64              // counts the didChangeWatchedFiles notifications sent
	watcher      *rootWatcher        // Config.WatchFiles; nil without

	docSem   chan struct{} // held while a document notification or a pull is handed over
	docMu    sync.Mutex    // guards docs, versions, regs; never held while sending
	docs     map[string]*openDoc
	versions map[string]int          // last version used per URI, across close and re-open
	regs     map[string]registration // dynamic registrations, by id
	sync     syncOptions
	enc      PositionEncoding

	reqCtx       context.Context // parent of the server-request handlers' contexts
	cancelReq    context.CancelFunc
	handlerWG    sync.WaitGroup
	handlersDone chan struct{}

	stop         chan struct{} // closed by teardown
	stopOnce     sync.Once
	readerDone   chan struct{}
	readErr      error // final once readerDone is closed
	writerDone   chan struct{}
	dispatchDone chan struct{}
	done         chan struct{} // closed by the supervisor once the server's end is known
	final        error         // final once done is closed

	terminated atomic.Bool  // the client had to terminate the tree
	escaped    atomic.Int64 // processes outside the group that Shutdown had to end
	acked      atomic.Bool  // the server answered shutdown
	exitSent   atomic.Bool  // exit was handed to the writer: the server may go at any moment

	politeOnce  sync.Once
	shutdownErr error
	closeOnce   sync.Once
}

type outgoing struct {
	body       []byte
	done       chan error
	onHandover func() // run by the writer before it writes body
}

type notification struct {
	method string
	params json.RawMessage
}

type reply struct {
	result json.RawMessage
	rpcErr *RPCError
	err    error  // the connection ended
	seq    uint64 // Client.pubSeq when the answer arrived: the publishes read before it
}

// wireMessage is any incoming message: request, notification or response.
type wireMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *RPCError       `json:"error"`
}

type wireRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      *int64          `json:"id,omitempty"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

type wireResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// Start launches the server described by cfg as a process tree of svc (stdin and stdout
// piped, stderr collected as a bounded tail, cwd the workspace root), performs the
// initialize handshake and sends initialized. ctx bounds the launch and the handshake only.
//
// When the server fails before answering initialize, Start ends it and returns the error: a
// *ServerExitError when it exited, or when it wrote something that is not LSP and was
// terminated for it (Cause then holds the *ConnError); ctx's error, with the tail of its
// stderr, when it did not answer in time. Spawn errors wrap subprocess.ErrNotFound,
// ErrPermission and ErrInvalid as subprocess.Spawn does; a bad Config wraps
// subprocess.ErrInvalid.
func Start(ctx context.Context, svc *subprocess.Service, cfg Config) (*Client, error) {
	if svc == nil {
		return nil, invalid("(service)", "Start needs a *subprocess.Service")
	}
	cfg, err := cfg.withDefaults(svc)
	if err != nil {
		return nil, err
	}
	h, err := svc.Spawn(ctx, subprocess.Spec{
		Path: cfg.Path, Args: cfg.Args, Dir: cfg.Root, Env: cfg.Env,
		Stdin:  subprocess.Input{Kind: subprocess.InputPipe},
		Stdout: subprocess.Output{Disposition: subprocess.Pipe},
		Stderr: subprocess.Output{TailBytes: cfg.StderrTailBytes, SpillBytes: cfg.StderrSpillBytes},
		Grace:  cfg.Grace,
	})
	if err != nil {
		return nil, newError("start", cfg.Path, nil, err)
	}
	c := newClient(cfg, h)
	err = c.initialize(ctx)
	if err == nil && cfg.WatchFiles {
		c.watcher, err = startWatcher(c, cfg.Root, svc.RuntimeRoot())
	}
	if err != nil {
		c.abort()
		var exit *ServerExitError
		var conn *ConnError
		if errors.As(err, &conn) && errors.As(c.final, &exit) {
			// The server broke the protocol and was terminated: say how it ended too.
			return nil, c.final
		}
		if !errors.As(err, &exit) {
			if tail := lastLines(c.StderrTail(), 3, 400); tail != "" {
				err = &Error{Op: "start", Name: cfg.Path, Err: err, Hint: "server stderr ends: " + strconv.Quote(tail)}
			}
		}
		return nil, err
	}
	return c, nil
}

func newClient(cfg Config, h *subprocess.Handle) *Client {
	c := &Client{
		cfg: cfg, name: cfg.Path, h: h, log: cfg.Logger.With("server", cfg.Path, "pid", h.Pid()),
		stdin: h.Stdin(), stdout: h.Stdout(),
		out: make(chan outgoing), cancels: make(chan int64, cancelQueue),
		pending: map[int64]chan reply{}, serverReqs: map[string]context.CancelFunc{},
		diags: map[string]DiagnosticSet{}, diagsChanged: make(chan struct{}),
		progress: map[string]bool{}, answers: map[string][]answer{},
		docSem: make(chan struct{}, 1), docs: map[string]*openDoc{}, versions: map[string]int{},
		regs:         map[string]registration{},
		handlersDone: make(chan struct{}), stop: make(chan struct{}),
		readerDone: make(chan struct{}), writerDone: make(chan struct{}),
		dispatchDone: make(chan struct{}), done: make(chan struct{}),
	}
	c.fr = framing.NewReader(c.stdout, cfg.MaxFrameBytes)
	c.fw = framing.NewWriter(c.stdin)
	c.handlers = c.defaultHandlers()
	for m, fn := range cfg.Handlers {
		c.handlers[m] = fn
	}
	c.reqCtx, c.cancelReq = context.WithCancel(context.Background())
	go c.read()
	go c.write()
	if cfg.OnNotification != nil {
		c.notes = make(chan notification, cfg.NotificationQueue)
		go c.dispatch()
	} else {
		close(c.dispatchDone)
	}
	go c.supervise()
	return c
}

type initializeParams struct {
	ProcessID             int               `json:"processId"`
	ClientInfo            ServerInfo        `json:"clientInfo"`
	Locale                string            `json:"locale,omitempty"`
	RootPath              string            `json:"rootPath"`
	RootURI               string            `json:"rootUri"`
	InitializationOptions any               `json:"initializationOptions,omitempty"`
	Capabilities          json.RawMessage   `json:"capabilities"`
	Trace                 string            `json:"trace"`
	WorkspaceFolders      []WorkspaceFolder `json:"workspaceFolders"`
}

func (c *Client) initialize(ctx context.Context) error {
	params := initializeParams{
		ProcessID: os.Getpid(), ClientInfo: ServerInfo{Name: "subkit"},
		RootPath: c.cfg.Root, RootURI: FileURI(c.cfg.Root),
		InitializationOptions: c.cfg.InitializationOptions, Capabilities: c.cfg.Capabilities,
		Trace: "off", WorkspaceFolders: c.folders(),
	}
	var raw json.RawMessage
	if err := c.Call(ctx, "initialize", params, &raw); err != nil {
		return err
	}
	if err := json.Unmarshal(raw, &c.init); err != nil {
		return newError("initialize", c.name, nil, fmt.Errorf("decode result: %w", err))
	}
	c.sync = parseSync(c.init.Capabilities)
	c.enc = negotiatedEncoding(raw)
	return c.Notify(ctx, "initialized", struct{}{})
}

func (c *Client) folders() []WorkspaceFolder {
	return []WorkspaceFolder{{URI: FileURI(c.cfg.Root), Name: filepath.Base(c.cfg.Root)}}
}

// InitializeResult is the server's answer to initialize: its capabilities and serverInfo.
func (c *Client) InitializeResult() InitializeResult {
	if c == nil {
		return InitializeResult{}
	}
	return c.init
}

// Root is the workspace root directory (absolute).
func (c *Client) Root() string {
	if c == nil {
		return ""
	}
	return c.cfg.Root
}

// Pid is the server's process id (its process group id on POSIX).
func (c *Client) Pid() int {
	if c == nil || c.h == nil {
		return 0
	}
	return c.h.Pid()
}

// Handle is the server's process tree, for offset reads of its stderr or signals. Ending it
// behind the Client's back is seen as a crash.
func (c *Client) Handle() *subprocess.Handle {
	if c == nil {
		return nil
	}
	return c.h
}

// StderrTail returns the bytes of the server's stderr still held in memory (at most
// Config.StderrTailBytes), while it runs and after.
func (c *Client) StderrTail() []byte {
	if c == nil || c.h == nil {
		return nil
	}
	d, err := c.h.ReadOutput(subprocess.Stderr, 0, 0)
	if err != nil {
		return nil
	}
	return d.Data
}

// DroppedNotifications counts the notifications dropped because OnNotification fell more
// than Config.NotificationQueue behind.
func (c *Client) DroppedNotifications() uint64 {
	if c == nil {
		return 0
	}
	return c.dropped.Load()
}

// Done is closed once the connection has ended and the server's exit is known: after a crash
// or a connection failure, or at the end of Shutdown. Err says why.
func (c *Client) Done() <-chan struct{} {
	if c == nil || c.done == nil { // not a Client from Start: nothing will ever run
		closed := make(chan struct{})
		close(closed)
		return closed
	}
	return c.done
}

// Err is nil while the connection lives. Once Done is closed it is a *ServerExitError when
// the server ended on its own or was terminated after a connection failure, or an *Error
// wrapping ErrClosed after Shutdown.
func (c *Client) Err() error {
	if err := c.usable(context.Background(), "Err"); err != nil {
		return err
	}
	select {
	case <-c.done:
		return c.final
	default:
		return nil
	}
}

// Call sends a request and waits for its answer, which it unmarshals into result (unless
// result is nil). When ctx ends first, Call sends $/cancelRequest for it and returns ctx's
// error; a late answer is dropped. An error answer is a *RPCError; a server that ends while
// the call waits fails it at once with the connection's error (a *ServerExitError, a
// *ConnError, or an *Error wrapping ErrClosed).
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	if err := c.usable(ctx, method); err != nil {
		return err
	}
	p, _, err := c.startCall(ctx, method, params)
	if err != nil {
		return err
	}
	return p.await(ctx, result)
}

// pendingCall is a request written to the server, waiting for its answer.
type pendingCall struct {
	c      *Client
	id     int64
	method string
	ch     chan reply
	seq    uint64 // Client.pubSeq when the answer arrived
}

// seqOf is pubSeq when p's answer arrived (0 for no call).
func (p *pendingCall) seqOf() uint64 {
	if p == nil {
		return 0
	}
	return p.seq
}

// startCall writes a request and returns without waiting for its answer. handedOver says
// whether the request reached the writer (it then goes out whole even when err is ctx's).
func (c *Client) startCall(ctx context.Context, method string, params any) (p *pendingCall, handedOver bool, err error) {
	if err := ctx.Err(); err != nil {
		return nil, false, ctxError(method, "", err)
	}
	id := c.nextID.Add(1)
	req := wireRequest{JSONRPC: "2.0", ID: &id, Method: method}
	body, err := encode(req, params)
	if err != nil {
		return nil, false, newError(method, "", subprocess.ErrInvalid, fmt.Errorf("encode params: %w", err))
	}
	ch := make(chan reply, 1)
	c.mu.Lock()
	if c.failed != nil {
		c.mu.Unlock()
		return nil, false, c.failed
	}
	c.pending[id] = ch
	c.mu.Unlock()
	if handedOver, err := c.send(ctx, method, body, nil); err != nil {
		c.forget(id)
		if handedOver { // it goes out anyway: tell the server not to bother
			select {
			case c.cancels <- id:
			default:
			}
		}
		return nil, handedOver, err
	}
	return &pendingCall{c: c, id: id, method: method, ch: ch}, true, nil
}

// await waits for the answer of p.
func (p *pendingCall) await(ctx context.Context, result any) error {
	c, id, method, ch := p.c, p.id, p.method, p.ch
	select {
	case r := <-ch:
		p.seq = r.seq
		switch {
		case r.err != nil:
			return r.err
		case r.rpcErr != nil:
			r.rpcErr.Method = method
			return r.rpcErr
		case result != nil && len(r.result) > 0:
			if err := json.Unmarshal(r.result, result); err != nil {
				return newError(method, "", nil, fmt.Errorf("decode result: %w", err))
			}
		}
		return nil
	case <-ctx.Done():
		c.forget(id)
		select {
		case c.cancels <- id:
		default:
		}
		return &Error{Op: method, Name: "request " + strconv.FormatInt(id, 10), Err: ctx.Err(), Hint: "abandoned, $/cancelRequest sent"}
	}
}

// Notify sends a notification. It returns once the message is written to the server's
// stdin, or with ctx's error (the message may still go out whole: frames are never cut).
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	if err := c.usable(ctx, method); err != nil {
		return err
	}
	_, err := c.notify(ctx, method, params, nil)
	return err
}

// notify sends a notification; handedOver says whether it reached the writer (it then goes
// out whole even when err is ctx's).
//
// onHandover, when set, runs as the writer takes the message: before the server can read it,
// so that whatever the server sends in answer finds the client's state already changed.
func (c *Client) notify(ctx context.Context, method string, params any, onHandover func()) (handedOver bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, ctxError(method, "", err)
	}
	body, err := encode(wireRequest{JSONRPC: "2.0", Method: method}, params)
	if err != nil {
		return false, newError(method, "", subprocess.ErrInvalid, fmt.Errorf("encode params: %w", err))
	}
	c.mu.Lock()
	failed := c.failed
	c.mu.Unlock()
	if failed != nil {
		return false, failed
	}
	return c.send(ctx, method, body, onHandover)
}

// usable checks the receiver and ctx of an exported method.
func (c *Client) usable(ctx context.Context, op string) error {
	switch {
	case c == nil || c.h == nil:
		return invalidArg(op, "", "not a Client from Start")
	case ctx == nil:
		return invalidArg(op, "", "nil context")
	}
	return nil
}

func encode(req wireRequest, params any) ([]byte, error) {
	if params != nil {
		p, err := json.Marshal(params)
		if err != nil {
			return nil, err
		}
		req.Params = p
	}
	return json.Marshal(req)
}

func (c *Client) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// send hands body to the writer and waits until it is written. handedOver says whether the
// writer took it: it then goes out whole, unless the write itself fails.
func (c *Client) send(ctx context.Context, method string, body []byte, onHandover func()) (handedOver bool, err error) {
	done := make(chan error, 1)
	select {
	case c.out <- outgoing{body: body, done: done, onHandover: onHandover}:
	case <-ctx.Done():
		return false, ctxError(method, "", ctx.Err())
	case <-c.done:
		return false, c.final
	case <-c.stop:
		return false, newError(method, c.name, ErrClosed, nil)
	}
	select {
	case err := <-done:
		if err != nil {
			return false, c.writeFailed(ctx, err)
		}
		return true, nil
	case <-ctx.Done():
		return true, &Error{Op: method, Err: ctx.Err(), Hint: "the message is still written whole"}
	}
}

// writeFailed explains a failed write: usually the server is gone, and the supervisor is
// about to say how; wait a little for that verdict.
func (c *Client) writeFailed(ctx context.Context, err error) error {
	t := time.NewTimer(c.cfg.Grace)
	defer t.Stop()
	select {
	case <-c.done:
		return c.final
	case <-t.C:
	case <-ctx.Done():
	}
	return &ConnError{Server: c.name, Op: "write", Err: err}
}

// write is the one goroutine writing to the server's stdin.
func (c *Client) write() {
	defer close(c.writerDone)
	for {
		select {
		case <-c.stop:
			return
		case id := <-c.cancels:
			body, _ := encode(wireRequest{JSONRPC: "2.0", Method: "$/cancelRequest"}, map[string]int64{"id": id})
			if err := c.fw.WriteMessage(body); err != nil {
				c.log.Debug("lsp: $/cancelRequest not written", "id", id, "err", err)
			}
		case m := <-c.out:
			if m.onHandover != nil {
				m.onHandover()
			}
			m.done <- c.fw.WriteMessage(m.body)
		}
	}
}

// read is the one goroutine reading the server's stdout. It never blocks on a consumer.
func (c *Client) read() {
	defer close(c.readerDone)
	for {
		body, err := c.fr.ReadMessage()
		if err != nil {
			c.readErr = err
			return
		}
		c.handle(body)
	}
}

func (c *Client) handle(body []byte) {
	var m wireMessage
	if err := json.Unmarshal(body, &m); err != nil {
		c.log.Warn("lsp: ignoring a message that is not JSON-RPC", "err", err, "body", excerpt(body))
		return
	}
	hasID := len(m.ID) > 0 && string(m.ID) != "null"
	switch {
	case m.Method != "" && hasID:
		c.serveRequest(m)
	case m.Method != "":
		c.notification(m)
	case hasID:
		c.deliver(m)
	default:
		c.log.Warn("lsp: ignoring a message with neither method nor id", "body", excerpt(body))
	}
}

func excerpt(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}

func (c *Client) deliver(m wireMessage) {
	var id int64
	if err := json.Unmarshal(m.ID, &id); err != nil {
		var s string
		if json.Unmarshal(m.ID, &s) != nil {
			c.log.Warn("lsp: ignoring a response with an unknown id", "id", string(m.ID))
			return
		}
		if id, err = strconv.ParseInt(s, 10, 64); err != nil {
			c.log.Warn("lsp: ignoring a response with an unknown id", "id", s)
			return
		}
	}
	c.mu.Lock()
	ch := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if ch == nil {
		c.log.Debug("lsp: dropping the answer to an abandoned request", "id", id)
		return
	}
	c.diagMu.Lock()
	seq := c.pubSeq
	c.diagMu.Unlock()
	ch <- reply{result: m.Result, rpcErr: m.Error, seq: seq}
}

func (c *Client) notification(m wireMessage) {
	switch m.Method {
	case "$/cancelRequest":
		var p struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(m.Params, &p) == nil {
			c.mu.Lock()
			cancel := c.serverReqs[string(p.ID)]
			c.mu.Unlock()
			if cancel != nil {
				cancel()
			}
		}
		return
	case "textDocument/publishDiagnostics":
		c.storeDiagnostics(m.Params)
	case "$/progress":
		c.trackProgress(m.Params)
	}
	if c.notes == nil {
		return
	}
	select {
	case c.notes <- notification{method: m.Method, params: m.Params}:
	default:
		if n := c.dropped.Add(1); n&(n-1) == 0 {
			c.log.Warn("lsp: notification handler is behind; dropping notifications", "dropped", n, "method", m.Method)
		}
	}
}

// dispatch runs OnNotification, one notification at a time, off the reader.
func (c *Client) dispatch() {
	defer close(c.dispatchDone)
	for {
		select {
		case n := <-c.notes:
			c.cfg.OnNotification(n.method, n.params)
		case <-c.readerDone:
			for { // nothing more will come: deliver what is queued
				select {
				case n := <-c.notes:
					c.cfg.OnNotification(n.method, n.params)
				default:
					return
				}
			}
		}
	}
}

// serveRequest answers a server-to-client request on a goroutine of its own.
func (c *Client) serveRequest(m wireMessage) {
	switch m.Method {
	case "client/registerCapability", "client/unregisterCapability":
		c.trackRegistrations(m.Method, m.Params)
	}
	fn := c.handlers[m.Method]
	key := string(m.ID)
	ctx, cancel := context.WithCancel(context.WithValue(c.reqCtx, clientKey{}, c))
	c.mu.Lock()
	c.serverReqs[key] = cancel
	c.mu.Unlock()
	c.handlerWG.Add(1)
	go func() {
		defer c.handlerWG.Done()
		var result any
		var err error
		if fn != nil {
			result, err = fn(ctx, m.Params)
		} else {
			err = &RPCError{Code: CodeMethodNotFound, Message: "method not supported by the client: " + m.Method}
		}
		cancelled := ctx.Err() != nil && c.reqCtx.Err() == nil
		c.mu.Lock()
		delete(c.serverReqs, key)
		c.mu.Unlock()
		cancel()
		body := encodeResponse(m.ID, result, err, cancelled)
		if _, err := c.send(c.reqCtx, m.Method, body, nil); err != nil {
			c.log.Debug("lsp: answer to a server request not sent", "method", m.Method, "err", err)
		}
	}()
}

func encodeResponse(id json.RawMessage, result any, err error, cancelled bool) []byte {
	resp := wireResponse{JSONRPC: "2.0", ID: id}
	if err == nil {
		b, merr := json.Marshal(result)
		if merr == nil {
			resp.Result = b
		} else {
			err = &RPCError{Code: CodeInternalError, Message: "client could not encode its answer: " + merr.Error()}
		}
	}
	if err != nil {
		var re *RPCError
		switch {
		case errors.As(err, &re):
			resp.Error = &RPCError{Code: re.Code, Message: re.Message, Data: re.Data}
		case cancelled && errors.Is(err, context.Canceled):
			resp.Error = &RPCError{Code: CodeRequestCancelled, Message: "cancelled"}
		default:
			resp.Error = &RPCError{Code: CodeRequestFailed, Message: err.Error()}
		}
	}
	b, _ := json.Marshal(resp)
	return b
}

// failAll fails every pending call with err, and every later one.
func (c *Client) failAll(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.failed = err
	for id, ch := range c.pending {
		ch <- reply{err: err}
		delete(c.pending, id)
	}
}

func (c *Client) cutReader() {
	c.mu.Lock()
	c.cut = true
	c.mu.Unlock()
	c.stdout.Close()
}

// exitWait is how long the server's own process may take to leave once its stdout has ended:
// Config.ExitTimeout for a server that acknowledged shutdown (it is alive and leaving), else
// Config.Grace.
func (c *Client) exitWait() time.Duration {
	if c.acked.Load() {
		return max(c.cfg.ExitTimeout, c.cfg.Grace)
	}
	return c.cfg.Grace
}

// supervise waits for the connection to end, decides why, and publishes the verdict.
func (c *Client) supervise() {
	defer close(c.done)
	select {
	case <-c.readerDone:
	case <-c.h.Done(): // the leader is gone but a descendant holds its stdout
		t := time.NewTimer(readDrain)
		select {
		case <-c.readerDone:
		case <-t.C:
			c.cutReader()
			<-c.readerDone
		}
		t.Stop()
	}
	c.mu.Lock()
	closing, cut := c.closing, c.cut
	c.mu.Unlock()

	var connErr error
	switch err := c.readErr; {
	case err == nil || err == io.EOF || cut:
	case c.exitSent.Load():
		// After exit the server may leave at any moment, even in the middle of a frame
		// (gopls does): what it left unfinished on the wire is no failure. Its exit status
		// and whether it leaves in time say how it ended.
		c.log.Debug("lsp: output cut short after exit", "err", err)
	default:
		connErr = readFailure(c.name, err)
		c.log.Warn("lsp: connection failed; terminating the server", "err", err)
		c.failAll(connErr) // at once: the server will not answer any more
	}
	c.cancelReq()
	if connErr != nil {
		c.terminate(context.Background())
	}
	t := time.NewTimer(c.exitWait())
	select {
	case <-c.h.Done():
	case <-t.C: // it closed its stdout but lives on: it is of no use any more
		c.terminate(context.Background())
		<-c.h.Done()
	}
	t.Stop()
	res, _ := c.h.Wait(context.Background())

	final := error(newError("shutdown", c.name, ErrClosed, nil))
	if !closing || connErr != nil {
		final = &ServerExitError{
			Server: c.name, Pid: res.Pid, ExitCode: res.ExitCode, Signal: res.Signal,
			Stderr: res.Stderr.Tail, StderrTruncated: res.Stderr.Truncated, Cause: connErr,
		}
	}
	c.mu.Lock()
	c.crashed = !closing && connErr == nil
	c.mu.Unlock()
	c.failAll(final)
	c.final = final
}
