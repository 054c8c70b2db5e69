package sandbox

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"

	"golang.org/x/sys/unix"
)

// serveProxy brings up the loopback of the init's network namespace (new, and the program's)
// and passes every connection to 127.0.0.1:ProxyPort on to the allow-list proxy, whose socket
// proxy is an O_PATH descriptor of (connected to as /proc/self/fd/N: the socket's directory may
// be covered by a private file system now). It returns once it listens; the connections are
// served for the life of the init.
func serveProxy(proxy int) error {
	if err := loopbackUp(); err != nil {
		return err
	}
	l, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: ProxyPort})
	if err != nil {
		return err
	}
	target := &net.UnixAddr{Net: "unix", Name: "/proc/self/fd/" + strconv.Itoa(proxy)}
	go func() {
		for {
			c, err := l.AcceptTCP()
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue // EMFILE and the like: the next one may do
			}
			go forward(c, target)
		}
	}()
	return nil
}

// forward copies c to and from a new connection to the proxy at target, half-closing each way
// as the other ends.
func forward(c *net.TCPConn, target *net.UnixAddr) {
	defer c.Close()
	u, err := net.DialUnix("unix", nil, target)
	if err != nil {
		return // the client sees its connection closed: the proxy is gone with its host
	}
	defer u.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(u, c)
		_ = u.CloseWrite()
		close(done)
	}()
	_, _ = io.Copy(c, u)
	_ = c.CloseWrite()
	<-done
}

// loopbackUp sets the IFF_UP flag of "lo".
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("reading the flags of lo: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing lo up: %w", err)
	}
	return nil
}
