package netproxy_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"

	"github.com/subkit/subkit/internal/netproxy"
)

// A proxy for the registries a build needs: the listener would be a Unix socket bridged into
// a sandbox; here it is a loopback port, and a client asks for a host not on the list.
func Example() {
	p, err := netproxy.New(netproxy.Config{
		Allow: []string{"proxy.golang.org", "*.npmjs.org:443", "files.pythonhosted.org"},
		Deny:  []string{"evil.npmjs.org"},
		// A real proxy leaves Resolver nil (the system's resolver).
		Resolver: func(ctx context.Context, host string) ([]netip.Addr, error) {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		},
		Name: "subkit sandbox",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(context.Background(), l) }()

	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Fprintf(c, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Status)
	resp.Body.Close()
	c.Close()

	for _, r := range p.Refused() {
		fmt.Printf("refused %s:%d x%d\n", r.Host, r.Port, r.Count)
	}
	if err := p.Close(); err != nil {
		fmt.Println(err)
	}
	fmt.Println(errors.Is(<-served, netproxy.ErrClosed))

	_, err = netproxy.New(netproxy.Config{Allow: []string{"*.npmjs.org:https"}})
	fmt.Println(err)
	// Output:
	// 403 subkit sandbox: example.com:443 is not in the network allow-list (add --allow example.com)
	// refused example.com:443 x1
	// true
	// netproxy: allow pattern "*.npmjs.org:https": port "https" is not a number from 1 to 65535
}
