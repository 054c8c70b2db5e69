package testutil

import (
	"net"
	"testing"
)

// HostListener listens on TCP on an IPv4 address of this host other than loopback (which the
// sandbox's allow-list proxy refuses unless named exactly, and which NO_PROXY sends past it)
// until the test ends. It skips the test on a host that has loopback only.
func HostListener(t testing.TB) net.Listener {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() {
			l, err := net.Listen("tcp4", net.JoinHostPort(n.IP.String(), "0"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			return l
		}
	}
	t.Skip("this host has no address but loopback")
	return nil
}
