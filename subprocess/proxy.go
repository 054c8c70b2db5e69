package subprocess

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/subkit/subkit/internal/netproxy"
	"github.com/subkit/subkit/sandbox"
)

// proxyName starts the line a client is given for a refusal ("subkit proxy: pypi.org:443 is
// not in the network allow-list (add --allow pypi.org)").
const proxyName = "subkit proxy"

// allowProxy is the allow-list proxy of one sandboxed program (sandbox.NetworkAllowList),
// served on a Unix socket of the runtime root for the program's life: the sandbox's init
// passes the program's connections on to it.
type allowProxy struct {
	p      *netproxy.Proxy
	sock   string
	served chan error // Serve's error, once it returned
}

// startProxy starts the proxy of pol's allow-list; op and name make its errors.
func (s *Service) startProxy(op, name string, pol *sandbox.Policy) (*allowProxy, error) {
	p, err := netproxy.New(netproxy.Config{Allow: pol.Allow, Deny: pol.Deny, Name: proxyName})
	if err != nil {
		kind := ErrSystem
		if errors.Is(err, netproxy.ErrInvalid) {
			kind = ErrInvalid
		}
		return nil, &Error{Op: op, Name: name, Kind: kind, Err: fmt.Errorf("sandbox network allow-list: %w", err)}
	}
	var id [6]byte
	_, _ = rand.Read(id[:]) // never fails (crypto/rand)
	sock := filepath.Join(s.root, "px-"+hex.EncodeToString(id[:])+".sock")
	l, err := net.Listen("unix", sock) // in the runtime root, which only this user can enter
	if err != nil {
		return nil, &Error{Op: op, Name: name, Kind: ErrSystem, Err: errors.Join(fmt.Errorf("sandbox network allow-list: %w", err), p.Close())}
	}
	a := &allowProxy{p: p, sock: sock, served: make(chan error, 1)}
	go func() { a.served <- p.Serve(context.Background(), l) }()
	return a, nil
}

// end stops the proxy (its program has ended, and the sandbox's network with it) and returns
// rep with the refused connections listed; rep itself is not changed. What fails in stopping
// it is logged: the program's result does not depend on it.
func (a *allowProxy) end(log *slog.Logger, rep *sandbox.Report) *sandbox.Report {
	err := a.p.Close()
	if serr := <-a.served; !errors.Is(serr, netproxy.ErrClosed) {
		err = errors.Join(err, serr)
	}
	if rerr := os.Remove(a.sock); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = errors.Join(err, rerr) // the listener removes it on close
	}
	if err != nil {
		log.Warn("stopping the sandbox's allow-list proxy", "socket", a.sock, "err", err)
	}
	out := *rep
	for _, r := range a.p.Refused() {
		line := strings.TrimPrefix(r.Reason, proxyName+": ")
		if r.Count > 1 {
			line += fmt.Sprintf(" (%d times)", r.Count)
		}
		out.NetworkRefused = append(out.NetworkRefused, line)
	}
	return &out
}
