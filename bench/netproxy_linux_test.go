//go:build linux

package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/subkit/subkit/internal/netproxy"
)

// BenchmarkProxyDownload256MiB is row 20: a 256 MiB HTTP download from a loopback server
// through the allow-list proxy's CONNECT tunnel (the proxy on a Unix socket, as a sandbox
// reaches it; the name resolved by the proxy and checked), against the same request sent to
// the server directly. MB/s is the figure compared. Each download is a fresh connection; the
// CONNECT and its answer are timed with it.
func BenchmarkProxyDownload256MiB(b *testing.B) {
	const n = 256
	srv := newBlobServer(b, n*mib)
	target := "blob.test:" + strconv.Itoa(srv.port)
	p, err := netproxy.New(netproxy.Config{
		Allow: []string{"blob.test"},
		Resolver: func(ctx context.Context, host string) ([]netip.Addr, error) {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	sock := filepath.Join(b.TempDir(), "proxy.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		b.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- p.Serve(context.Background(), l) }()
	b.Cleanup(func() {
		if err := p.Close(); err != nil {
			b.Errorf("close proxy: %v", err)
		}
		if err := <-served; !errors.Is(err, netproxy.ErrClosed) {
			b.Errorf("serve: %v", err)
		}
	})

	b.Run("subkit", func(b *testing.B) {
		b.SetBytes(n * mib)
		b.ReportAllocs()
		for b.Loop() {
			c, err := net.Dial("unix", sock)
			if err != nil {
				b.Fatal(err)
			}
			br := bufio.NewReaderSize(c, 64<<10)
			if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target); err != nil {
				b.Fatal(err)
			}
			resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
			if err != nil || resp.StatusCode != 200 {
				b.Fatalf("CONNECT: %v %v", resp, err)
			}
			download(b, c, br, n*mib)
		}
	})
	b.Run("baseline", func(b *testing.B) {
		b.SetBytes(n * mib)
		b.ReportAllocs()
		for b.Loop() {
			c, err := net.Dial("tcp", srv.addr)
			if err != nil {
				b.Fatal(err)
			}
			download(b, c, bufio.NewReaderSize(c, 64<<10), n*mib)
		}
	})
}

// download sends GET /blob over c, reads the whole body and closes c.
func download(b *testing.B, c net.Conn, br *bufio.Reader, want int64) {
	defer c.Close()
	if _, err := io.WriteString(c, "GET /blob HTTP/1.1\r\nHost: blob.test\r\nConnection: close\r\n\r\n"); err != nil {
		b.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		b.Fatal(err)
	}
	got, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil || got != want {
		b.Fatalf("read %d bytes (%v), want %d", got, err, want)
	}
}

// blobServer serves size bytes of zeros at every path, over HTTP on loopback.
type blobServer struct {
	addr string
	port int
}

func newBlobServer(b *testing.B, size int64) *blobServer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	chunk := make([]byte, mib)
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		for left := size; left > 0; left -= int64(len(chunk)) {
			if _, err := w.Write(chunk[:min(left, int64(len(chunk)))]); err != nil {
				return
			}
		}
	})}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(l) }()
	b.Cleanup(func() {
		if err := hs.Close(); err != nil {
			b.Errorf("close blob server: %v", err)
		}
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			b.Errorf("blob server: %v", err)
		}
	})
	return &blobServer{addr: l.Addr().String(), port: l.Addr().(*net.TCPAddr).Port}
}
