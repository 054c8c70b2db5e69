package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// mcpTokenVar is the environment variable that may carry the --http bearer token. (Its name
// matches the credential scrub, so no command the server runs inherits it.)
const mcpTokenVar = "SUBKIT_MCP_TOKEN"

// mcpMinToken is the shortest bearer token accepted: shorter ones can be guessed.
const mcpMinToken = 16

// mcpToken is the bearer token every --http request must carry, and where it came from.
type mcpToken struct {
	value     string
	generated string // the file a token made at start was written to (removed at exit), or ""
}

// loadMcpToken takes the token from --token-file, else from SUBKIT_MCP_TOKEN; with neither,
// it makes a random one and writes it to a new owner-only file in the temp dir. A file or
// variable that cannot serve is an error for the usage; a token that cannot be written is not.
func loadMcpToken(file, env string) (tok mcpToken, usage bool, err error) {
	switch {
	case file != "":
		fi, err := os.Stat(file)
		if err != nil {
			return tok, true, fmt.Errorf("--token-file: %w", err)
		}
		if perm := fi.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
			return tok, true, fmt.Errorf("--token-file %s can be read or changed by other users (mode %04o): chmod 600 it", file, perm)
		}
		data, err := os.ReadFile(file)
		if err != nil {
			return tok, true, fmt.Errorf("--token-file: %w", err)
		}
		tok.value = strings.TrimSpace(string(data))
		if err := checkToken(tok.value); err != nil {
			return tok, true, fmt.Errorf("--token-file %s: %w", file, err)
		}
	case env != "":
		tok.value = strings.TrimSpace(env)
		if err := checkToken(tok.value); err != nil {
			return tok, true, fmt.Errorf("%s: %w", mcpTokenVar, err)
		}
	default:
		f, err := os.CreateTemp("", "subkit-mcp-token-*") // mode 0600, a new name
		if err != nil {
			return tok, false, fmt.Errorf("writing a new bearer token: %w", err)
		}
		tok.value = rand.Text()
		_, werr := io.WriteString(f, tok.value+"\n")
		if err := errors.Join(werr, f.Close()); err != nil {
			os.Remove(f.Name())
			return tok, false, fmt.Errorf("writing a new bearer token: %w", err)
		}
		tok.generated = f.Name()
	}
	return tok, false, nil
}

func checkToken(t string) error {
	if len(t) < mcpMinToken {
		return fmt.Errorf("the token has %d characters; give at least %d (e.g. openssl rand -hex 32)", len(t), mcpMinToken)
	}
	for i := 0; i < len(t); i++ {
		if t[i] <= ' ' || t[i] > '~' {
			return errors.New("the token must be printable ASCII without spaces (it is sent in an HTTP header)")
		}
	}
	return nil
}

// guardHTTP checks every request before next sees it: a cross-origin request (a web page of
// another origin, DNS rebinding) is 403, one without the bearer token 401.
func guardHTTP(token string, next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := checkOrigin(r); err != nil {
			http.Error(w, "403 forbidden: "+err.Error(), http.StatusForbidden)
			return
		}
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		sum := sha256.Sum256([]byte(strings.TrimSpace(got))) // equal lengths: the comparison takes the same time for any token
		if !ok || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="subkit mcp"`)
			http.Error(w, "401 unauthorized: send the header \"Authorization: Bearer TOKEN\" with the token of --token-file or "+
				mcpTokenVar+", or of the file subkit mcp named when it started", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// checkOrigin lets a request through when it names no Origin or this server's own
// (http://HOST, HOST as the request gives it); a browser that says the request is
// cross-site is refused too.
func checkOrigin(r *http.Request) error {
	switch r.Header.Get("Sec-Fetch-Site") {
	case "", "same-origin", "none":
	default:
		return fmt.Errorf("a cross-site request (Sec-Fetch-Site: %s) is refused", r.Header.Get("Sec-Fetch-Site"))
	}
	origins := r.Header.Values("Origin")
	if len(origins) == 0 {
		return nil
	}
	if len(origins) == 1 {
		if u, err := url.Parse(origins[0]); err == nil && u.Scheme == "http" && u.User == nil && u.Path == "" &&
			u.RawQuery == "" && u.Fragment == "" && strings.EqualFold(u.Host, r.Host) {
			return nil
		}
	}
	return fmt.Errorf("Origin %q is not this server's (http://%s): requests from other origins are refused", strings.Join(origins, ", "), r.Host)
}

// mcpMaxClients bounds the MCP sessions open at once over HTTP.
const mcpMaxClients = 64

// serveHTTP serves streamable HTTP on addr until ctx ends, every request checked by guardHTTP.
// A session idle (no request in progress) for idle is ended as by a DELETE.
func (s *mcpServer) serveHTTP(ctx context.Context, server *mcp.Server, addr, token string, idle time.Duration, stderr io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	g := &sessionGate{s: s, server: server, idle: idle, clocks: map[string]*idleClock{},
		next: mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
			&mcp.StreamableHTTPOptions{Logger: s.log, MaxRequestBodyBytes: mcpMaxMessage})}
	mux := http.NewServeMux()
	mux.Handle("/mcp", g)
	hs := &http.Server{Handler: guardHTTP(token, mux), ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	fmt.Fprintf(stderr, "subkit mcp: serving MCP over streamable HTTP at http://%s/mcp\n", ln.Addr())
	select {
	case err = <-done:
	case <-ctx.Done():
	}
	s.leave() // the calls in flight end first: closing a session waits for them
	g.stop()
	closeSessions := func() {
		for ss := range server.Sessions() { // long-lived event streams would hold Shutdown
			if cerr := ss.Close(); cerr != nil {
				s.log.Debug("close session", "err", cerr)
			}
		}
	}
	closeSessions()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if serr := hs.Shutdown(sctx); serr != nil {
		err = errors.Join(err, serr, hs.Close())
	}
	closeSessions() // any a request made while the first ones closed
	if err == nil || errors.Is(err, http.ErrServerClosed) {
		if e := <-done; !errors.Is(e, http.ErrServerClosed) {
			return e
		}
		return nil
	}
	return err
}

// sessionGate stands before the SDK's handler and keeps the sessions' lifecycle: a DELETE
// is answered at once, the session's world ending (its calls cancelled, its processes and
// sessions ended within the grace) and the session closing behind the answer; a session
// with no request in progress for idle is ended the same way; no new session is made past
// mcpMaxClients.
type sessionGate struct {
	s      *mcpServer
	server *mcp.Server
	next   http.Handler
	idle   time.Duration

	mu      sync.Mutex
	clocks  map[string]*idleClock // by session id
	stopped bool
}

// idleClock is a session's: its requests in progress, and the timer that ends it once there
// has been none for the idle time.
type idleClock struct {
	active int
	timer  *time.Timer
}

const sessionHeader = "Mcp-Session-Id"

func (g *sessionGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get(sessionHeader)
	switch {
	case id == "" && r.Method == http.MethodPost:
		if n := len(slices.Collect(g.server.Sessions())); n >= mcpMaxClients {
			http.Error(w, fmt.Sprintf("503 service unavailable: %d MCP sessions are open, the limit of this server; "+
				"end one (DELETE), or wait until one is idle for --session-idle %v", n, g.idle), http.StatusServiceUnavailable)
			return
		}
		g.next.ServeHTTP(w, r)
		if id := w.Header().Get(sessionHeader); id != "" { // a session was made
			g.begin(id, true)
			g.done(id)
		}
	case id != "" && r.Method == http.MethodDelete:
		if ss := g.session(id); ss != nil {
			g.end(ss)
			w.WriteHeader(http.StatusNoContent)
			return
		}
		g.next.ServeHTTP(w, r)
	case id != "" && r.Method == http.MethodPost:
		g.begin(id, false)
		defer g.done(id)
		g.next.ServeHTTP(w, r)
	default:
		g.next.ServeHTTP(w, r)
	}
}

// session is the open session with this id, or nil.
func (g *sessionGate) session(id string) *mcp.ServerSession {
	for ss := range g.server.Sessions() {
		if ss.ID() == id {
			return ss
		}
	}
	return nil
}

// begin counts a request of session id in progress (and, when made, starts its clock).
func (g *sessionGate) begin(id string, made bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.clocks[id]
	if c == nil {
		if !made || g.stopped {
			return // not a session of ours: the SDK answers
		}
		c = &idleClock{timer: time.AfterFunc(g.idle, func() { g.expire(id) })}
		g.clocks[id] = c
	}
	if c.active == 0 {
		c.timer.Stop()
	}
	c.active++
}

// done counts a request of session id ended; with none left the idle time starts.
func (g *sessionGate) done(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c := g.clocks[id]; c != nil {
		if c.active--; c.active == 0 {
			c.timer.Reset(g.idle)
		}
	}
}

// expire ends session id, idle for the idle time.
func (g *sessionGate) expire(id string) {
	g.mu.Lock()
	c := g.clocks[id]
	expired := c != nil && c.active == 0 && !g.stopped
	g.mu.Unlock()
	if !expired {
		return
	}
	if ss := g.session(id); ss != nil {
		g.end(ss)
	} else {
		g.forget(id)
	}
}

func (g *sessionGate) forget(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c := g.clocks[id]; c != nil {
		c.timer.Stop()
		delete(g.clocks, id)
	}
}

// end ends session ss now: its world starts ending at once (calls cancelled, everything it
// started ended within the grace), and the SDK's session is closed behind, once its
// cancelled calls have returned.
func (g *sessionGate) end(ss *mcp.ServerSession) {
	g.forget(ss.ID())
	if w := g.s.worldOf(ss); w != nil {
		w.leave()
	}
	g.s.goTask(func() {
		if err := ss.Close(); err != nil {
			g.s.log.Debug("close session", "err", err)
		}
	})
}

// stop stops every clock: the server is shutting down and ends every session itself.
func (g *sessionGate) stop() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stopped = true
	for id, c := range g.clocks {
		c.timer.Stop()
		delete(g.clocks, id)
	}
}
