//go:build unix

package netproxy

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnixListener: the proxy served on a Unix socket, as a sandbox reaches it: a CONNECT
// tunnel and SOCKS5 work, a half-close crosses, and the bytes are counted once the tunnel
// ends.
func TestUnixListener(t *testing.T) {
	port := eofServer(t)
	p, err := New(Config{Allow: []string{"eof.test"}, Resolver: mapResolver(map[string][]string{"eof.test": {"127.0.0.1"}})})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "proxy.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(context.Background(), l) }()
	defer func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
		if err := <-served; !errors.Is(err, ErrClosed) {
			t.Errorf("Serve: %v", err)
		}
	}()
	payload := strings.Repeat("y", 5<<20)
	answer := fmt.Sprintf("read %d bytes", len(payload))
	for _, via := range []string{"connect", "socks5"} {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(c)
		if via == "connect" {
			fmt.Fprintf(c, "CONNECT eof.test:%d HTTP/1.1\r\nHost: eof.test\r\n\r\n", port)
			resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("CONNECT: %v %v", resp, err)
			}
		} else {
			c.Write([]byte{5, 1, 0, 5, 1, 0, 3, 8, 'e', 'o', 'f', '.', 't', 'e', 's', 't', byte(port >> 8), byte(port)})
			head := make([]byte, 2+10)
			if _, err := io.ReadFull(br, head); err != nil || head[3] != 0 {
				t.Fatalf("socks5: % x %v", head, err)
			}
		}
		if _, err := io.WriteString(c, payload); err != nil {
			t.Fatal(err)
		}
		if err := c.(*net.UnixConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(br)
		if err != nil || string(got) != answer {
			t.Errorf("%s: %q %v", via, got, err)
		}
		c.Close()
	}
	waitFor(t, "both tunnels ended", func() bool {
		recs, _ := p.Records()
		return len(recs) == 2 && !recs[0].End.IsZero() && !recs[1].End.IsZero()
	})
	recs, _ := p.Records()
	for _, r := range recs {
		if r.BytesUp != int64(len(payload)) || r.BytesDown != int64(len(answer)) || r.Error != "" {
			t.Errorf("%s: %+v", r.Via, r)
		}
	}
}
