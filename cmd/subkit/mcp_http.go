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
	"strings"
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

// serveHTTP serves streamable HTTP on addr until ctx ends, every request checked by guardHTTP.
func (s *mcpServer) serveHTTP(ctx context.Context, server *mcp.Server, addr, token string, stderr io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Logger: s.log, MaxRequestBodyBytes: mcpMaxMessage}))
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
