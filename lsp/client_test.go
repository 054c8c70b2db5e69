//go:build unix

package lsp_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
	"github.com/subkit/subkit/lsp"
	"github.com/subkit/subkit/subprocess"
)

func experimental(t *testing.T, c *lsp.Client) map[string]json.RawMessage {
	t.Helper()
	var caps struct {
		Experimental map[string]json.RawMessage `json:"experimental"`
	}
	require.NoError(t, json.Unmarshal(c.InitializeResult().Capabilities, &caps))
	return caps.Experimental
}

func TestSessionAgainstFake(t *testing.T) {
	e := newEnv(t)
	root := t.TempDir()
	writeFile(t, root, "notes.txt", "all good\nan ERROR here, and ünï ERROR\n")
	var mu sync.Mutex
	var methods []string
	c := e.start(t, lsp.Config{Root: root, OnNotification: func(method string, _ json.RawMessage) {
		mu.Lock()
		methods = append(methods, method)
		mu.Unlock()
	}})

	// The handshake: what the server saw and what it answered.
	init := c.InitializeResult()
	require.NotNil(t, init.ServerInfo)
	assert.Equal(t, lsp.ServerInfo{Name: "fakeserver", Version: "1.0"}, *init.ServerInfo)
	var params struct {
		ProcessID        int                   `json:"processId"`
		RootURI          string                `json:"rootUri"`
		RootPath         string                `json:"rootPath"`
		WorkspaceFolders []lsp.WorkspaceFolder `json:"workspaceFolders"`
		ClientInfo       lsp.ServerInfo        `json:"clientInfo"`
		Capabilities     json.RawMessage       `json:"capabilities"`
	}
	require.NoError(t, json.Unmarshal(experimental(t, c)["initParams"], &params))
	assert.Equal(t, os.Getpid(), params.ProcessID)
	assert.Equal(t, lsp.FileURI(root), params.RootURI)
	assert.Equal(t, root, params.RootPath)
	assert.Equal(t, []lsp.WorkspaceFolder{{URI: lsp.FileURI(root), Name: filepath.Base(root)}}, params.WorkspaceFolders)
	assert.Equal(t, "subkit", params.ClientInfo.Name)
	jsonEq(t, json.RawMessage(lsp.DefaultCapabilities()), params.Capabilities)
	assert.Equal(t, root, c.Root())

	// Diagnostics and hover.
	uri, err := openFile(ctxT(t, 10*time.Second), c, "notes.txt")
	require.NoError(t, err)
	assert.Equal(t, lsp.FileURI(filepath.Join(root, "notes.txt")), uri)
	set, err := c.Diagnostics(ctxT(t, 10*time.Second), uri, 1)
	require.NoError(t, err)
	diags := set.Diagnostics
	require.Len(t, diags, 2)
	assert.Equal(t, "found ERROR", diags[0].Message)
	assert.Equal(t, lsp.SeverityError, diags[0].Severity)
	assert.Equal(t, lsp.Range{Start: lsp.Position{Line: 1, Character: 3}, End: lsp.Position{Line: 1, Character: 8}}, diags[0].Range)
	assert.Equal(t, 23, diags[1].Range.Start.Character, "UTF-16 columns")
	got, err := c.Diagnostics(ctxT(t, time.Second), uri, 1, lsp.NoWait)
	require.NoError(t, err)
	assert.Equal(t, diags, got.Diagnostics)
	assert.Equal(t, 1, got.Version)
	assert.True(t, got.Versioned)
	all := c.AllDiagnostics()
	require.Len(t, all, 1)
	assert.Equal(t, diags, all[uri].Diagnostics)
	_, err = c.Diagnostics(ctxT(t, time.Second), "file:///nowhere", 0, lsp.NoWait)
	assert.ErrorIs(t, err, lsp.ErrNoDiagnostics)

	text, _ := os.ReadFile(filepath.Join(root, "notes.txt"))
	pos, err := lsp.PositionFor(text, 2, 28) // the second ERROR, after "ünï" (2-byte runes)
	require.NoError(t, err)
	h, err := c.Hover(ctxT(t, 10*time.Second), uri, pos)
	require.NoError(t, err)
	assert.Equal(t, "`ERROR` at 1:25", h.Text())
	h, err = c.Hover(ctxT(t, 10*time.Second), "file:///not/open", pos)
	require.NoError(t, err)
	assert.Nil(t, h)

	// Plain calls and errors.
	var echo map[string]int
	require.NoError(t, c.Call(ctxT(t, 10*time.Second), "test/echo", map[string]int{"a": 1}, &echo))
	assert.Equal(t, map[string]int{"a": 1}, echo)
	err = c.Call(ctxT(t, 10*time.Second), "test/error", nil, nil)
	var rpcErr *lsp.RPCError
	require.ErrorAs(t, err, &rpcErr)
	assert.EqualValues(t, lsp.CodeRequestFailed, rpcErr.Code)
	assert.Equal(t, "test/error", rpcErr.Method)
	assert.EqualError(t, err, "lsp: test/error: server error -32803: it failed on purpose")
	err = c.Call(ctxT(t, 10*time.Second), "no/such/method", nil, nil)
	require.ErrorAs(t, err, &rpcErr)
	assert.EqualValues(t, lsp.CodeMethodNotFound, rpcErr.Code)
	assert.Error(t, c.Call(ctxT(t, 10*time.Second), "test/echo", func() {}, nil), "params that do not encode")

	// Shutdown: clean, reported, and idempotent.
	select {
	case <-c.Done():
		t.Fatal("Done before shutdown")
	default:
	}
	assert.NoError(t, c.Err())
	exit, err := c.Shutdown(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, lsp.EndedClean, exit.Ended)
	assert.Equal(t, 0, exit.ExitCode)
	assert.Equal(t, "", exit.Signal)
	assert.NoError(t, exit.ShutdownErr)
	assert.Contains(t, string(exit.Stderr.Tail), "fakeserver: bye")
	assert.Equal(t, c.Pid(), exit.Pid)
	again, err := c.Shutdown(ctxT(t, 10*time.Second))
	require.NoError(t, err)
	assert.Equal(t, exit, again)
	assert.NoError(t, c.Close())
	assert.NoError(t, c.Close())
	<-c.Done()
	assert.ErrorIs(t, c.Err(), lsp.ErrClosed)
	assert.ErrorIs(t, c.Call(context.Background(), "test/echo", nil, nil), lsp.ErrClosed)
	assert.ErrorIs(t, c.Notify(context.Background(), "test/echo", nil), lsp.ErrClosed)
	assert.Empty(t, testutil.Marked(e.mark), "no server process left")
	mu.Lock()
	assert.Contains(t, methods, "window/logMessage")
	assert.Contains(t, methods, "textDocument/publishDiagnostics")
	mu.Unlock()
}

func TestServerRequestsBeforeInitializeReply(t *testing.T) {
	e := newEnv(t)
	root := t.TempDir()
	settings := map[string]any{"fake": map[string]any{"nested": map[string]any{"key": 42}, "x": "y"}}
	var mu sync.Mutex
	var notes []string
	c := e.start(t, lsp.Config{Root: root, Settings: settings, OnNotification: func(method string, params json.RawMessage) {
		mu.Lock()
		notes = append(notes, method+" "+string(params))
		mu.Unlock()
	}}, "-mode=requests-first")

	var answers map[string]struct {
		Result json.RawMessage `json:"result"`
		Error  *lsp.RPCError   `json:"error"`
	}
	require.NoError(t, json.Unmarshal(experimental(t, c)["answers"], &answers))
	for _, m := range []string{"window/workDoneProgress/create", "client/registerCapability", "client/unregisterCapability", "window/showMessageRequest"} {
		assert.Nil(t, answers[m].Error, m)
		assert.Equal(t, "null", string(answers[m].Result), m)
	}
	assert.Nil(t, answers["workspace/configuration"].Error)
	jsonEq(t, []any{settings["fake"], 42, nil, settings}, answers["workspace/configuration"].Result)
	jsonEq(t, []lsp.WorkspaceFolder{{URI: lsp.FileURI(root), Name: filepath.Base(root)}}, answers["workspace/workspaceFolders"].Result)
	require.NotNil(t, answers["custom/unknown"].Error)
	assert.EqualValues(t, lsp.CodeMethodNotFound, answers["custom/unknown"].Error.Code)

	require.NoError(t, c.Close())
	mu.Lock()
	defer mu.Unlock()
	require.GreaterOrEqual(t, len(notes), 2)
	assert.Contains(t, notes[0], "before initialize reply", "notifications arrive in order")
	assert.True(t, strings.HasPrefix(notes[1], "$/progress "), notes[1])
}

func TestHandlers(t *testing.T) {
	e := newEnv(t)
	c := e.start(t, lsp.Config{Handlers: map[string]lsp.RequestHandler{
		"workspace/configuration":   func(context.Context, json.RawMessage) (any, error) { return []string{"mine"}, nil },
		"client/registerCapability": nil, // remove a default
		"custom/ping":               func(context.Context, json.RawMessage) (any, error) { return map[string]bool{"pong": true}, nil },
		"custom/fail":               func(context.Context, json.RawMessage) (any, error) { return nil, errors.New("nope") },
		"custom/rpc": func(context.Context, json.RawMessage) (any, error) {
			return nil, &lsp.RPCError{Code: 7, Message: "seven", Data: json.RawMessage(`{"x":1}`)}
		},
		"custom/block": func(ctx context.Context, _ json.RawMessage) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}})
	ask := func(method string) (result json.RawMessage, rpcErr *lsp.RPCError) {
		t.Helper()
		var r struct {
			Result json.RawMessage `json:"result"`
			Error  *lsp.RPCError   `json:"error"`
		}
		require.NoError(t, c.Call(ctxT(t, 10*time.Second), "test/request", map[string]any{"method": method, "params": map[string]any{}}, &r))
		return r.Result, r.Error
	}
	res, rerr := ask("workspace/configuration")
	assert.Nil(t, rerr)
	assert.JSONEq(t, `["mine"]`, string(res))
	_, rerr = ask("client/registerCapability")
	require.NotNil(t, rerr)
	assert.EqualValues(t, lsp.CodeMethodNotFound, rerr.Code)
	res, rerr = ask("window/workDoneProgress/create") // other defaults stay
	assert.Nil(t, rerr)
	assert.Equal(t, "null", string(res))
	res, _ = ask("custom/ping")
	assert.JSONEq(t, `{"pong":true}`, string(res))
	_, rerr = ask("custom/fail")
	require.NotNil(t, rerr)
	assert.Equal(t, lsp.RPCError{Code: lsp.CodeRequestFailed, Message: "nope"}, *rerr)
	_, rerr = ask("custom/rpc")
	require.NotNil(t, rerr)
	assert.EqualValues(t, 7, rerr.Code)
	assert.JSONEq(t, `{"x":1}`, string(rerr.Data))

	// The server cancels its own request: the handler's ctx ends, the answer is RequestCancelled.
	var r struct {
		Error *lsp.RPCError `json:"error"`
	}
	require.NoError(t, c.Call(ctxT(t, 10*time.Second), "test/requestcancel", map[string]any{"method": "custom/block"}, &r))
	require.NotNil(t, r.Error)
	assert.EqualValues(t, lsp.CodeRequestCancelled, r.Error.Code)
}

func TestCallCancelSendsCancelRequest(t *testing.T) {
	e := newEnv(t)
	cancelled := make(chan string, 4)
	c := e.start(t, lsp.Config{OnNotification: func(method string, params json.RawMessage) {
		if method == "test/cancelled" {
			cancelled <- string(params)
		}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	begin := time.Now()
	err := c.Call(ctx, "test/slow", nil, nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(begin), 2*time.Second)
	assert.Contains(t, err.Error(), "$/cancelRequest sent")
	select {
	case p := <-cancelled:
		var v struct{ ID int64 }
		require.NoError(t, json.Unmarshal([]byte(p), &v), p)
		assert.Greater(t, v.ID, int64(1), "initialize was request 1")
	case <-time.After(5 * time.Second):
		t.Fatal("the server never saw $/cancelRequest")
	}
	// The late RequestCancelled answer is dropped; the connection goes on.
	var s string
	require.NoError(t, c.Call(ctxT(t, 10*time.Second), "test/echo", "still here", &s))
	assert.Equal(t, "still here", s)
	// A ctx already done sends nothing.
	done, cancel2 := context.WithCancel(context.Background())
	cancel2()
	assert.ErrorIs(t, c.Call(done, "test/echo", nil, nil), context.Canceled)
	assert.ErrorIs(t, c.Notify(done, "test/echo", nil), context.Canceled)
}

func TestNotificationHandlerNeverBlocksReader(t *testing.T) {
	e := newEnv(t)
	release := make(chan struct{})
	var mu sync.Mutex
	var seen []string
	c := e.start(t, lsp.Config{NotificationQueue: 16, OnNotification: func(method string, params json.RawMessage) {
		<-release
		mu.Lock()
		seen = append(seen, string(params))
		mu.Unlock()
	}})
	var s string
	begin := time.Now()
	require.NoError(t, c.Call(ctxT(t, 10*time.Second), "test/notifications", map[string]int{"n": 1000}, &s))
	assert.Equal(t, "sent", s)
	assert.Less(t, time.Since(begin), 5*time.Second)
	// Diagnostics are stored by the reader, whatever the handler does.
	dir := c.Root()
	writeFile(t, dir, "a.txt", "ERROR")
	uri, err := openFile(ctxT(t, 10*time.Second), c, "a.txt")
	require.NoError(t, err)
	set, err := c.Diagnostics(ctxT(t, 10*time.Second), uri, 1)
	require.NoError(t, err)
	assert.Len(t, set.Diagnostics, 1)
	assert.GreaterOrEqual(t, c.DroppedNotifications(), uint64(1000-16-1))
	close(release)
	require.NoError(t, c.Close())
	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, seen)
	assert.LessOrEqual(t, len(seen), 16+2)
}

func TestShutdownConcurrentAndCtx(t *testing.T) {
	e := newEnv(t)
	c := e.start(t, lsp.Config{})
	var wg sync.WaitGroup
	exits := make([]lsp.Exit, 4)
	for i := range exits {
		wg.Go(func() {
			var err error
			exits[i], err = c.Shutdown(ctxT(t, 10*time.Second))
			assert.NoError(t, err)
		})
	}
	wg.Wait()
	for _, x := range exits[1:] {
		assert.Equal(t, exits[0], x)
	}
	assert.Equal(t, lsp.EndedClean, exits[0].Ended)
}

func TestShutdownCtxEndsFirst(t *testing.T) {
	e := newEnv(t)
	c := e.start(t, lsp.Config{Grace: 2 * time.Second, ShutdownTimeout: 100 * time.Millisecond}, "-mode=ignore-term")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	begin := time.Now()
	exit, err := c.Shutdown(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(begin), 2*time.Second)
	assert.Equal(t, lsp.EndedUnknown, exit.Ended)
	assert.ErrorIs(t, exit.ShutdownErr, context.DeadlineExceeded)
	// Close waits for the termination that went on.
	require.NoError(t, c.Close())
	exit, err = c.Shutdown(context.Background())
	require.NoError(t, err)
	assert.Equal(t, lsp.EndedKilled, exit.Ended)
	assert.Equal(t, "SIGKILL", exit.Signal)
	assert.Empty(t, testutil.Marked(e.mark))
}

func TestStartErrors(t *testing.T) {
	e := newEnv(t)
	_, err := lsp.Start(context.Background(), nil, lsp.Config{Path: fakeServer})
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	_, err = lsp.Start(context.Background(), e.svc, lsp.Config{})
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	assert.ErrorContains(t, err, "Config.Path")
	_, err = lsp.Start(context.Background(), e.svc, lsp.Config{Path: fakeServer, Grace: -1})
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	_, err = lsp.Start(context.Background(), e.svc, lsp.Config{Path: fakeServer, Capabilities: json.RawMessage(`{`)})
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	_, err = lsp.Start(context.Background(), e.svc, lsp.Config{Path: "no-such-language-server-xyz"})
	assert.ErrorIs(t, err, subprocess.ErrNotFound)
	_, err = lsp.Start(context.Background(), e.svc, lsp.Config{Path: fakeServer, Root: "/no/such/dir"})
	assert.ErrorIs(t, err, subprocess.ErrNotFound)
	_, err = lsp.Start(context.Background(), e.svc, lsp.Config{Path: fakeServer, Root: fakeServer})
	assert.ErrorIs(t, err, subprocess.ErrInvalid)

	t.Run("crash on initialize", func(t *testing.T) {
		_, err := e.try(t, lsp.Config{}, "-mode=crash-on-init")
		var exit *lsp.ServerExitError
		require.ErrorAs(t, err, &exit)
		assert.Equal(t, 2, exit.ExitCode)
		assert.Contains(t, string(exit.Stderr), "fatal: cannot start: no workspace")
		assert.Contains(t, err.Error(), "exited with code 2")
		assert.Contains(t, err.Error(), "cannot start")
		assert.Empty(t, testutil.Marked(e.mark))
	})
	t.Run("not a language server", func(t *testing.T) {
		_, err := e.try(t, lsp.Config{Path: "bash", Args: []string{"-c", "echo hello world; echo oops >&2; sleep 100"}})
		require.ErrorIs(t, err, lsp.ErrMalformedFrame)
		var ce *lsp.ConnError
		require.ErrorAs(t, err, &ce)
		assert.Contains(t, err.Error(), `"hello world"`)
		assert.Contains(t, err.Error(), "servers log to stderr")
		assert.Empty(t, testutil.Marked(e.mark))
	})
	t.Run("no answer to initialize", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		_, err := lsp.Start(ctx, e.svc, lsp.Config{Path: "bash", Args: []string{"-c", "echo waiting >&2; exec sleep 100"}, Grace: 200 * time.Millisecond})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Contains(t, err.Error(), `server stderr ends: "waiting"`)
		assert.Empty(t, testutil.Marked(e.mark))
	})
}

func TestRootDefaultsToServiceCwd(t *testing.T) {
	e := newEnv(t)
	c := e.start(t, lsp.Config{Root: "."})
	wd, _ := os.Getwd()
	assert.Equal(t, wd, c.Root())
	require.NoError(t, c.Close())
}

// A shut-down Client, a shut-down Pool and a closed Service all fail with errors that match
// subprocess.ErrClosed, so one test covers every closed adapter.
func TestClosedErrorsAreSubprocessErrClosed(t *testing.T) {
	assert.ErrorIs(t, lsp.ErrClosed, subprocess.ErrClosed)
	e := newEnv(t)
	c := e.start(t, lsp.Config{})
	require.NoError(t, c.Close())
	for name, err := range map[string]error{
		"Call":   c.Call(ctxT(t, time.Second), "test/echo", 1, nil),
		"Notify": c.Notify(ctxT(t, time.Second), "test/echo", 1),
		"Err":    c.Err(),
	} {
		assert.ErrorIs(t, err, lsp.ErrClosed, name)
		assert.ErrorIs(t, err, subprocess.ErrClosed, name)
		assert.ErrorContains(t, err, "lsp: ", name)
	}
	_, err := c.Open(ctxT(t, time.Second), lsp.FileURI(filepath.Join(c.Root(), "a.txt")), "", "x")
	assert.ErrorIs(t, err, subprocess.ErrClosed)

	p, err := lsp.NewPool(e.svc, lsp.PoolConfig{})
	require.NoError(t, err)
	require.NoError(t, p.Close())
	_, err = p.Get(ctxT(t, time.Second), lsp.Config{Path: fakeServer, Root: t.TempDir()})
	assert.ErrorIs(t, err, subprocess.ErrClosed)

	svc, err := subprocess.New(subprocess.Config{Env: testutil.Env(e.mark), TempDir: t.TempDir()})
	require.NoError(t, err)
	require.NoError(t, svc.Close())
	_, err = lsp.Start(ctxT(t, 10*time.Second), svc, lsp.Config{Path: fakeServer, Root: t.TempDir()})
	assert.ErrorIs(t, err, subprocess.ErrClosed, "a closed Service")
}
