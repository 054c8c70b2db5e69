package netproxy

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestPatternsValid(t *testing.T) {
	for _, tc := range []struct {
		in     string
		name   string
		suffix string
		prefix string
		ports  []int
	}{
		{in: "proxy.golang.org", name: "proxy.golang.org"},
		{in: "Proxy.Golang.ORG.", name: "proxy.golang.org"},
		{in: "*.npmjs.org", suffix: ".npmjs.org"},
		{in: "*.NPMJS.org:443", suffix: ".npmjs.org", ports: []int{443}},
		{in: "registry.npmjs.org:80,443", name: "registry.npmjs.org", ports: []int{80, 443}},
		{in: "localhost", name: "localhost"},
		{in: "xn--bcher-kva.de", name: "xn--bcher-kva.de"},
		{in: "bücher.de", name: "bücher.de"},
		{in: "10.0.0.5", prefix: "10.0.0.5/32"},
		{in: "10.0.0.5:8080", prefix: "10.0.0.5/32", ports: []int{8080}},
		{in: "10.1.2.3/8", prefix: "10.0.0.0/8"},
		{in: "10.0.0.0/8:22", prefix: "10.0.0.0/8", ports: []int{22}},
		{in: "::1", prefix: "::1/128"},
		{in: "[::1]", prefix: "::1/128"},
		{in: "[::1]:443", prefix: "::1/128", ports: []int{443}},
		{in: "fc00::/7", prefix: "fc00::/7"},
		{in: "[fc00::/7]:53", prefix: "fc00::/7", ports: []int{53}},
		{in: "::ffff:127.0.0.1", prefix: "127.0.0.1/32"},
		{in: "::ffff:10.0.0.0/104", prefix: "10.0.0.0/8"},
	} {
		p, err := parsePattern("allow", tc.in)
		if err != nil {
			t.Errorf("%q: %v", tc.in, err)
			continue
		}
		var prefix string
		if p.prefix.IsValid() {
			prefix = p.prefix.String()
		}
		if p.name != tc.name || p.suffix != tc.suffix || prefix != tc.prefix || !equalInts(p.ports, tc.ports) {
			t.Errorf("%q: got name %q suffix %q prefix %q ports %v", tc.in, p.name, p.suffix, prefix, p.ports)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPatternsInvalid(t *testing.T) {
	for _, tc := range []struct{ in, problem string }{
		{"", "empty"},
		{" a.com", "space"},
		{"*", "only allowed as a whole first label"},
		{"*.", "empty host name"},
		{"a.*.com", "only allowed as a whole first label"},
		{"*foo.com", "only allowed as a whole first label"},
		{"a..com", "empty label"},
		{"a.com:", "a colon without a port"},
		{"a.com:0", "not a number from 1 to 65535"},
		{"a.com:65536", "not a number from 1 to 65535"},
		{"a.com:http", "not a number"},
		{"a.com:443,", "not a number"},
		{"a.com:+443", "not a number"},
		{":443", "no host"},
		{"::1:443x", "more than one colon"},
		{"[::1", "without its ]"},
		{"[::1]443", "text after ]"},
		{"[a.com]:443", "neither an IPv6 address nor a CIDR"},
		{"10.0.0.0/33", "not a valid CIDR"},
		{"fe80::1%eth0", "zone"},
		{"a/b.com", "not a valid CIDR"},
		{"user@a.com", "cannot be in a host name"},
		{strings.Repeat("a", 64) + ".com", "longer than 63"},
	} {
		_, err := New(Config{Allow: []string{"ok.example"}, Deny: []string{tc.in}})
		var pe *PatternError
		if !errors.Is(err, ErrInvalid) || !errors.As(err, &pe) {
			t.Errorf("%q: got %v, want a *PatternError matching ErrInvalid", tc.in, err)
			continue
		}
		if pe.List != "deny" || pe.Pattern != tc.in || !strings.Contains(pe.Problem, tc.problem) {
			t.Errorf("%q: got %+v, want a problem with %q", tc.in, pe, tc.problem)
		}
		if !strings.Contains(err.Error(), tc.problem) {
			t.Errorf("%q: the message %q does not say what is wrong", tc.in, err)
		}
	}
	// Every bad pattern is reported, not only the first.
	_, err := New(Config{Allow: []string{"a..b", "ok.example", "c.com:x"}})
	if !strings.Contains(err.Error(), `"a..b"`) || !strings.Contains(err.Error(), `"c.com:x"`) {
		t.Errorf("got %v, want both bad patterns named", err)
	}
	for _, cfg := range []Config{{MaxRecords: -1}, {MaxConns: -1}, {HeadTimeout: -1}, {DialTimeout: -1}} {
		var ce *ConfigError
		if _, err := New(cfg); !errors.Is(err, ErrInvalid) || !errors.As(err, &ce) {
			t.Errorf("%+v: got %v, want a *ConfigError", cfg, err)
		}
	}
}

func mustPolicy(t *testing.T, allow, deny []string) *policy {
	t.Helper()
	pol, err := newPolicy(allow, deny)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

func TestPolicyCheck(t *testing.T) {
	pol := mustPolicy(t,
		[]string{"*.npmjs.org", "proxy.golang.org:443", "github.com", "*.github.com", "10.0.0.0/8", "[::1]:8080", "gist.github.com:22", "*.internal.example"},
		[]string{"evil.npmjs.org", "*.corp.internal.example", "10.9.0.0/16"})
	for _, tc := range []struct {
		host    string
		port    int
		allowed bool
		want    string // the matching pattern, or a piece of the reason
	}{
		{"a.npmjs.org", 443, true, "*.npmjs.org"},
		{"deep.a.npmjs.org", 80, true, "*.npmjs.org"},
		{"A.NPMJS.ORG.", 443, true, "*.npmjs.org"},
		{"npmjs.org", 443, false, "npmjs.org:443 is not in the network allow-list (add --allow npmjs.org)"},
		{"evilnpmjs.org", 443, false, "(add --allow evilnpmjs.org)"},
		{"evil.npmjs.org", 443, false, "denied by the network deny-list pattern evil.npmjs.org"},
		{"proxy.golang.org", 443, true, "proxy.golang.org:443"},
		{"proxy.golang.org", 80, false, "(add --allow proxy.golang.org:80)"},
		{"github.com", 22, true, "github.com"},
		{"gist.github.com", 22, true, "gist.github.com:22"}, // the exact pattern is preferred
		{"gist.github.com", 443, true, "*.github.com"},
		{"x.corp.internal.example", 443, false, "*.corp.internal.example"},
		{"corp.internal.example", 443, true, "*.internal.example"},
		{"10.1.2.3", 80, true, "10.0.0.0/8"},
		{"10.9.1.1", 80, false, "denied by the network deny-list pattern 10.9.0.0/16"},
		{"11.1.2.3", 80, false, "11.1.2.3:80 is an IP address, which only an IP or CIDR pattern allows (add --allow 11.1.2.3)"},
		{"::1", 8080, true, "[::1]:8080"},
		{"[::1]", 8080, true, "[::1]:8080"},
		{"::ffff:10.1.2.3", 80, true, "10.0.0.0/8"},
		{"::1", 80, false, "[::1]:80 is an IP address, which only an IP or CIDR pattern allows (add --allow [::1]:80)"},
		{"127.0.0.1", 80, false, "(add --allow 127.0.0.1)"},
	} {
		tg, err := parseTarget(tc.host, tc.port)
		if err != nil {
			t.Errorf("%s: %v", tc.host, err)
			continue
		}
		d := pol.check(tg)
		got := d.reason
		if d.allowed {
			got = d.match.text
		}
		if d.allowed != tc.allowed || !strings.Contains(got, tc.want) {
			t.Errorf("%s:%d: allowed %v (%s), want %v (%s)", tc.host, tc.port, d.allowed, got, tc.allowed, tc.want)
		}
	}
}

func TestParseHostPort(t *testing.T) {
	for _, tc := range []struct {
		in   string
		def  int
		want string // target's String, or "" for an error
	}{
		{"a.com:443", 0, "a.com:443"},
		{"A.com.:443", 0, "a.com:443"},
		{"a.com", 80, "a.com:80"},
		{"a.com", 0, ""},
		{"a.com:", 0, ""},
		{"a.com:0", 0, ""},
		{"a.com:99999", 0, ""},
		{"a.com:-1", 0, ""},
		{"[::1]:443", 0, "[::1]:443"},
		{"[::1]", 80, "[::1]:80"},
		{"[::ffff:127.0.0.1]:80", 0, "127.0.0.1:80"},
		{"::1", 80, "[::1]:80"},
		{"[a.com]:443", 0, ""},
		{"[fe80::1%25eth0]:80", 0, ""},
		{"1.2.3.4:5", 0, "1.2.3.4:5"},
		{"a b:80", 0, ""},
		{"a@b:80", 0, ""},
		{"", 80, ""},
	} {
		tg, err := parseHostPort(tc.in, tc.def)
		got := ""
		if err == nil {
			got = tg.String()
		}
		if got != tc.want {
			t.Errorf("%q: got %q (%v), want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestSpecialKind(t *testing.T) {
	own := []netip.Addr{netip.MustParseAddr("203.0.113.7"), netip.MustParseAddr("10.0.0.7")}
	for _, tc := range []struct{ addr, kind string }{
		{"127.0.0.1", "loopback"},
		{"127.3.2.1", "loopback"},
		{"::1", "loopback"},
		{"::ffff:127.0.0.1", "loopback"},
		{"169.254.169.254", "link-local"},
		{"::ffff:169.254.169.254", "link-local"},
		{"fe80::1", "link-local"},
		{"10.1.2.3", "private"},
		{"172.16.0.1", "private"},
		{"172.31.255.255", "private"},
		{"192.168.1.1", "private"},
		{"fd00::1", "private (unique local)"},
		{"100.64.0.1", "shared (CGNAT)"},
		{"0.0.0.0", "unspecified (this-network)"},
		{"::", "unspecified"},
		{"224.0.0.1", "multicast"},
		{"ff02::1", "multicast"},
		{"255.255.255.255", "broadcast"},
		{"64:ff9b::a9fe:a9fe", "link-local"}, // NAT64 of 169.254.169.254
		{"2002:7f00:1::1", "loopback"},       // 6to4 of 127.0.0.1
		{"203.0.113.7", ownKind},
		{"10.0.0.7", "private"}, // own, but private first
		{"8.8.8.8", ""},
		{"172.32.0.1", ""},
		{"2606:4700::1111", ""},
		{"64:ff9b::808:808", ""},
	} {
		if got := specialKind(netip.MustParseAddr(tc.addr), own); got != tc.kind {
			t.Errorf("%s: got %q, want %q", tc.addr, got, tc.kind)
		}
	}
}
