//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/internal/testutil"
)

// mcpHTTP is a `subkit mcp --http` server run in-process.
type mcpHTTP struct {
	url, token string
	stderr     *syncBuffer
	cancel     context.CancelFunc
	done       chan int
}

// mcpHTTPStart serves `subkit mcp --http 127.0.0.1:0 ARGS...` with a leak check and a token
// file of the test's (unless ARGS name one, or token is "-": then the server makes its own).
// At cleanup the server is interrupted and must exit with 130 and a quiet stderr.
func mcpHTTPStart(t *testing.T, token string, args ...string) *mcpHTTP {
	t.Helper()
	leakChecked(t)
	h := &mcpHTTP{stderr: &syncBuffer{}, done: make(chan int, 1), token: token}
	if token != "-" {
		if h.token == "" {
			h.token = "test-token-" + testutil.Mark()
		}
		f := filepath.Join(t.TempDir(), "token")
		require.NoError(t, os.WriteFile(f, []byte(h.token+"\n"), 0o600))
		args = append([]string{"--token-file", f}, args...)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() {
		h.done <- run(ctx, append([]string{"mcp", "--http", "127.0.0.1:0"}, args...), strings.NewReader(""), io.Discard, h.stderr)
	}()
	require.Eventually(t, func() bool {
		_, rest, ok := strings.Cut(h.stderr.String(), "streamable HTTP at ")
		h.url, _, _ = strings.Cut(rest, "\n")
		return ok && strings.HasSuffix(rest, "\n")
	}, 20*time.Second, 5*time.Millisecond, "stderr: %s", h.stderr)
	t.Cleanup(func() {
		if h.cancel != nil {
			assert.Equal(t, exitCancelled, h.stop(), "stderr: %s", h.stderr)
		}
	})
	return h
}

// stop interrupts the server and returns its exit status.
func (h *mcpHTTP) stop() int {
	h.cancel()
	h.cancel = nil
	return <-h.done
}

// bearer adds an Authorization header to every request.
type bearer struct {
	token  string
	origin string
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	if b.origin != "" {
		r.Header.Set("Origin", b.origin)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// connect connects the Go SDK's client with token (none when "").
func (h *mcpHTTP) connect(t *testing.T, token string) (*mcp.ClientSession, error) {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "subkit-test", Version: "1"}, nil)
	return client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: h.url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: bearer{token: token}}}, nil)
}

// session connects with the right token; the session is closed at cleanup.
func (h *mcpHTTP) session(t *testing.T) *mcpHTTPClient {
	t.Helper()
	sess, err := h.connect(t, h.token)
	require.NoError(t, err, "stderr: %s", h.stderr)
	t.Cleanup(func() { sess.Close() })
	return &mcpHTTPClient{ClientSession: sess, h: h}
}

type mcpHTTPClient struct {
	*mcp.ClientSession
	h *mcpHTTP
}

// conn is the session as an mcpConn, for the helpers of mcp_test.go.
func (c *mcpHTTPClient) conn() *mcpConn {
	return &mcpConn{ClientSession: c.ClientSession, stderr: c.h.stderr}
}

// raw posts body to the server as this session, with headers (Authorization and Origin
// only as given), and returns the status and the body.
func (c *mcpHTTPClient) raw(t *testing.T, headers map[string]string, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.h.url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", c.ID())
	req.Header.Set("MCP-Protocol-Version", c.InitializeResult().ProtocolVersion)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A request without the token, or with a wrong one, is 401 and runs nothing; with a wrong
// Origin it is 403 and runs nothing; the right token and no Origin, or the server's own, pass.
// A body over the 16 MiB limit is 413.
func TestMcpHTTPTokenAndOrigin(t *testing.T) {
	h := mcpHTTPStart(t, "")
	c := h.session(t)
	flag := filepath.Join(t.TempDir(), "ran")
	call := fmt.Sprintf(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"bash","arguments":{"command":"touch %s"}}}`, flag)
	for _, tc := range []struct {
		name    string
		headers map[string]string
		status  int
		want    string
	}{
		{"no token", nil, 401, "Authorization: Bearer"},
		{"wrong token", map[string]string{"Authorization": "Bearer " + h.token + "x"}, 401, "Authorization: Bearer"},
		{"token without Bearer", map[string]string{"Authorization": h.token}, 401, "Authorization: Bearer"},
		{"wrong origin", map[string]string{"Authorization": "Bearer " + h.token, "Origin": "http://evil.example"}, 403, "evil.example"},
		{"origin of another port", map[string]string{"Authorization": "Bearer " + h.token, "Origin": "http://127.0.0.1:1"}, 403, "not this server's"},
		{"null origin", map[string]string{"Authorization": "Bearer " + h.token, "Origin": "null"}, 403, "null"},
		{"cross-site fetch", map[string]string{"Authorization": "Bearer " + h.token, "Sec-Fetch-Site": "cross-site"}, 403, "cross-site"},
	} {
		status, body := c.raw(t, tc.headers, call)
		assert.Equal(t, tc.status, status, "%s: %s", tc.name, body)
		assert.Contains(t, body, tc.want, tc.name)
		assert.NoFileExists(t, flag, "%s: the command ran", tc.name)
	}
	_, err := h.connect(t, "")
	assert.ErrorContains(t, err, "Unauthorized", "the Go SDK client without the token")

	self := strings.TrimSuffix(h.url, "/mcp") // http://127.0.0.1:PORT
	status, body := c.raw(t, map[string]string{"Authorization": "Bearer " + h.token, "Origin": self}, call)
	assert.Equal(t, http.StatusOK, status, body)
	assert.FileExists(t, flag, "the server's own origin passes")
	res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "echo hi"}})
	require.NoError(t, err)
	assert.Equal(t, "hi\n[exit code 0]\n", mcpText(res))

	// A body over 16 MiB is refused, saying the limit; the session goes on.
	big := fmt.Sprintf(`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"bash","arguments":{"command":"cat >/dev/null","stdin":"%s"}}}`,
		strings.Repeat("x", 17_000_000))
	status, body = c.raw(t, map[string]string{"Authorization": "Bearer " + h.token}, big)
	assert.Equal(t, http.StatusRequestEntityTooLarge, status, body)
	assert.Contains(t, body, "16777216")
	res, err = c.CallTool(context.Background(), &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "echo still"}})
	require.NoError(t, err)
	assert.Equal(t, "still\n[exit code 0]\n", mcpText(res))
}

// Without --token-file or SUBKIT_MCP_TOKEN the server makes a token, writes it to a new 0600
// file it names on stderr, and removes the file at exit; an interrupt ends it with 130.
// SUBKIT_MCP_TOKEN is taken when set. A token file that others may read, a short token, and
// an address off loopback are bad usage.
func TestMcpHTTPTokenSources(t *testing.T) {
	h := mcpHTTPStart(t, "-")
	_, rest, ok := strings.Cut(h.stderr.String(), "the bearer token is in ")
	require.True(t, ok, "stderr: %s", h.stderr)
	path, _, _ := strings.Cut(rest, " ")
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	h.token = strings.TrimSpace(string(data))
	assert.GreaterOrEqual(t, len(h.token), 26)
	c := h.session(t)
	res, err := c.CallTool(context.Background(), &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "echo hi"}})
	require.NoError(t, err)
	assert.Equal(t, "hi\n[exit code 0]\n", mcpText(res))
	require.NoError(t, c.Close())
	assert.Equal(t, exitCancelled, h.stop())
	assert.NoFileExists(t, path, "the token file is removed at exit")

	t.Setenv(mcpTokenVar, "from-the-environment-0123")
	h = mcpHTTPStart(t, "-")
	assert.NotContains(t, h.stderr.String(), "bearer token is in")
	h.token = "from-the-environment-0123"
	c = h.session(t)
	// The variable is a credential: no command inherits it.
	res, err = c.CallTool(context.Background(), &mcp.CallToolParams{Name: "bash", Arguments: map[string]any{"command": "echo [$" + mcpTokenVar + "]"}})
	require.NoError(t, err)
	assert.Equal(t, "[]\n[exit code 0]\n", mcpText(res))

	open := filepath.Join(t.TempDir(), "open")
	require.NoError(t, os.WriteFile(open, []byte("a-token-long-enough-0123\n"), 0o644))
	short := filepath.Join(t.TempDir(), "short")
	require.NoError(t, os.WriteFile(short, []byte("short\n"), 0o600))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "--http", "127.0.0.1:0", "--token-file", open}, "chmod 600"},
		{[]string{"mcp", "--http", "127.0.0.1:0", "--token-file", short}, "at least 16"},
		{[]string{"mcp", "--http", "127.0.0.1:0", "--token-file", "/no/such/token"}, "no such file"},
		{[]string{"mcp", "--token-file", short}, "--token-file is for --http"},
		{[]string{"mcp", "--http", "0.0.0.0:8080"}, "only a loopback address"},
	} {
		code, _, errOut := cli(t, "", tc.args...)
		assert.Equal(t, exitUsage, code, "%v", tc.args)
		assert.Contains(t, errOut, tc.want, "%v", tc.args)
	}
}
