package netproxy

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// ErrInvalid is matched (errors.Is) by every configuration error New returns: a
// *PatternError for a bad host pattern, or a *ConfigError for a bad value elsewhere.
var ErrInvalid = errors.New("invalid proxy configuration")

// PatternError is a host pattern of Config.Allow or Config.Deny that New cannot use.
type PatternError struct {
	// List is "allow" or "deny": the Config field the pattern came from.
	List string
	// Pattern is the pattern as given.
	Pattern string
	// Problem says what is wrong with it, in a few words.
	Problem string
}

func (e *PatternError) Error() string {
	return fmt.Sprintf("netproxy: %s pattern %q: %s", e.List, e.Pattern, e.Problem)
}

// Is reports whether target is ErrInvalid.
func (e *PatternError) Is(target error) bool { return target == ErrInvalid }

// ConfigError is a Config field, other than a host pattern, that New cannot use.
type ConfigError struct {
	// Field is the name of the Config field.
	Field string
	// Problem says what is wrong with its value.
	Problem string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("netproxy: Config.%s: %s", e.Field, e.Problem)
}

// Is reports whether target is ErrInvalid.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalid }

// pattern is one parsed host pattern.
type pattern struct {
	text string // as given, for reasons
	// Exactly one of name, suffix and prefix is set.
	name   string       // an exact host name, normalized
	suffix string       // a wildcard: ".npmjs.org" for "*.npmjs.org"
	prefix netip.Prefix // an IP literal (a /32 or /128) or a CIDR, unmapped
	ports  []int        // nil: any port
}

// exact reports whether the pattern names its hosts exactly (an exact name, an IP literal or
// a CIDR), which lets it reach addresses that lead back into the host.
func (p *pattern) exact() bool { return p.suffix == "" }

// matchName reports whether the pattern matches host name (normalized, not an IP literal).
func (p *pattern) matchName(name string) bool {
	switch {
	case p.name != "":
		return p.name == name
	case p.suffix != "":
		return len(name) > len(p.suffix) && strings.HasSuffix(name, p.suffix)
	}
	return false
}

// matchAddr reports whether the pattern is an IP or CIDR pattern containing addr (unmapped).
func (p *pattern) matchAddr(addr netip.Addr) bool {
	return p.prefix.IsValid() && p.prefix.Contains(addr)
}

func (p *pattern) matchPort(port int) bool {
	return p.ports == nil || slices.Contains(p.ports, port)
}

// parsePattern parses one host pattern of list ("allow" or "deny").
func parsePattern(list, text string) (*pattern, error) {
	bad := func(problem string) error {
		return &PatternError{List: list, Pattern: text, Problem: problem}
	}
	s := text
	if s == "" {
		return nil, bad("empty")
	}
	if strings.TrimSpace(s) != s {
		return nil, bad("leading or trailing space")
	}
	host, portList, hasPort := s, "", false
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return nil, bad("an opening [ without its ]")
		}
		host = s[1:end]
		rest := s[end+1:]
		switch {
		case rest == "":
		case rest[0] == ':':
			portList, hasPort = rest[1:], true
		default:
			return nil, bad("text after ]: want ]:PORT")
		}
		if _, err := netip.ParseAddr(host); err != nil {
			if _, err := netip.ParsePrefix(host); err != nil {
				return nil, bad("brackets hold something that is neither an IPv6 address nor a CIDR")
			}
		}
	} else if strings.Count(s, ":") > 1 {
		// An IPv6 literal or CIDR without brackets takes no port.
		if _, err := netip.ParseAddr(s); err != nil {
			if _, err := netip.ParsePrefix(s); err != nil {
				return nil, bad("more than one colon: an IPv6 address with a port goes in brackets, [::1]:443")
			}
		}
	} else if i := strings.IndexByte(s, ':'); i >= 0 {
		host, portList, hasPort = s[:i], s[i+1:], true
	}
	p := &pattern{text: text}
	if hasPort {
		if portList == "" {
			return nil, bad("a colon without a port")
		}
		for f := range strings.SplitSeq(portList, ",") {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 || n > 65535 || f != strconv.Itoa(n) {
				return nil, bad(fmt.Sprintf("port %q is not a number from 1 to 65535", f))
			}
			if !slices.Contains(p.ports, n) {
				p.ports = append(p.ports, n)
			}
		}
	}
	if host == "" {
		return nil, bad("no host")
	}
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return nil, bad("an IPv6 zone is not allowed")
		}
		a = a.Unmap()
		p.prefix = netip.PrefixFrom(a, a.BitLen())
		return p, nil
	}
	if strings.Contains(host, "/") {
		pf, err := netip.ParsePrefix(host)
		if err != nil {
			return nil, bad("not a valid CIDR (want 10.0.0.0/8 or fc00::/7)")
		}
		a := pf.Addr()
		bits := pf.Bits()
		if a.Is4In6() {
			if bits < 96 {
				return nil, bad("an IPv4-mapped CIDR shorter than /96")
			}
			a, bits = a.Unmap(), bits-96
		}
		p.prefix = netip.PrefixFrom(a, bits).Masked()
		return p, nil
	}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		name, problem := normalizeName(rest)
		if problem != "" {
			return nil, bad(problem)
		}
		p.suffix = "." + name
		return p, nil
	}
	if strings.Contains(host, "*") {
		return nil, bad("a wildcard is only allowed as a whole first label: *.example.com")
	}
	name, problem := normalizeName(host)
	if problem != "" {
		return nil, bad(problem)
	}
	p.name = name
	return p, nil
}

// normalizeName lowercases a host name and drops one trailing dot. problem is non-empty when
// the name cannot be a host name. IDNA (Unicode or punycode) is compared as given.
func normalizeName(s string) (name, problem string) {
	s = strings.TrimSuffix(s, ".")
	if s == "" {
		return "", "an empty host name"
	}
	if len(s) > 253 {
		return "", "a host name longer than 253 bytes"
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" {
			return "", "an empty label (two dots in a row)"
		}
		if len(label) > 63 {
			return "", "a label longer than 63 bytes"
		}
	}
	for _, r := range s {
		if r <= ' ' || r == 0x7f || r == 0xfffd || strings.ContainsRune("/\\@?#%[]:*,;\"'<>|{}`^", r) {
			return "", fmt.Sprintf("the character %q cannot be in a host name", r)
		}
	}
	return strings.ToLower(s), ""
}

// policy is the parsed Allow and Deny lists.
type policy struct {
	allow, deny []*pattern
}

func newPolicy(allow, deny []string) (*policy, error) {
	pol := &policy{}
	var errs []error
	for _, s := range allow {
		p, err := parsePattern("allow", s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pol.allow = append(pol.allow, p)
	}
	for _, s := range deny {
		p, err := parsePattern("deny", s)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		pol.deny = append(pol.deny, p)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return pol, nil
}

// target is a destination a client asked for, normalized.
type target struct {
	host string     // a normalized name, or the IP literal's text (IPv6 without brackets)
	addr netip.Addr // valid when the client gave an IP literal; unmapped
	port int
}

// String is host:port, an IPv6 literal in brackets.
func (t target) String() string {
	if t.addr.IsValid() {
		return netip.AddrPortFrom(t.addr, uint16(t.port)).String()
	}
	return t.host + ":" + strconv.Itoa(t.port)
}

// hostPattern is the pattern that would allow exactly this host on any port.
func (t target) hostPattern() string {
	if t.addr.Is6() {
		return "[" + t.addr.String() + "]"
	}
	return t.host
}

// parseTarget normalizes a host (a name, an IPv4 literal, an IPv6 literal with or without
// brackets) and port a client asked for.
func parseTarget(host string, port int) (target, error) {
	if port < 1 || port > 65535 {
		return target{}, fmt.Errorf("port %d is not from 1 to 65535", port)
	}
	h := host
	if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
		h = h[1 : len(h)-1]
		a, err := netip.ParseAddr(h)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return target{}, fmt.Errorf("%q is not an IPv6 address", quoteHost(host))
		}
	}
	if a, err := netip.ParseAddr(h); err == nil {
		if a.Zone() != "" {
			return target{}, fmt.Errorf("%q: an IPv6 zone is not allowed", quoteHost(host))
		}
		a = a.Unmap()
		return target{host: a.String(), addr: a, port: port}, nil
	}
	name, problem := normalizeName(h)
	if problem != "" {
		return target{}, fmt.Errorf("%q is not a host name: %s", quoteHost(host), problem)
	}
	return target{host: name, port: port}, nil
}

// parseHostPort splits a host:port authority (a CONNECT target or a URL's host) and
// normalizes it; defPort is used when the authority has no port (0: a port is required).
func parseHostPort(authority string, defPort int) (target, error) {
	host, portText, hasPort := authority, "", false
	switch {
	case strings.HasPrefix(authority, "["):
		end := strings.IndexByte(authority, ']')
		if end < 0 {
			return target{}, fmt.Errorf("%q: an opening [ without its ]", quoteHost(authority))
		}
		host = authority[:end+1]
		switch rest := authority[end+1:]; {
		case rest == "":
		case rest[0] == ':':
			portText, hasPort = rest[1:], true
		default:
			return target{}, fmt.Errorf("%q: text after ]", quoteHost(authority))
		}
	case strings.Count(authority, ":") == 1:
		i := strings.IndexByte(authority, ':')
		host, portText, hasPort = authority[:i], authority[i+1:], true
	}
	port := defPort
	if hasPort {
		n, err := strconv.Atoi(portText)
		if err != nil || portText != strconv.Itoa(n) {
			return target{}, fmt.Errorf("%q: the port is not a number", quoteHost(authority))
		}
		port = n
	}
	if port == 0 {
		return target{}, fmt.Errorf("%q has no port", quoteHost(authority))
	}
	return parseTarget(host, port)
}

// quoteHost shortens what a client sent for use in a reason.
func quoteHost(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

// decision is the policy's answer for a target before resolution.
type decision struct {
	allowed bool
	reason  string
	// match is the allow pattern that matched (allowed only).
	match *pattern
}

// check decides a target by its name or IP literal alone.
func (pol *policy) check(t target) decision {
	for _, p := range pol.deny {
		if !p.matchPort(t.port) {
			continue
		}
		if (t.addr.IsValid() && p.matchAddr(t.addr)) || (!t.addr.IsValid() && p.matchName(t.host)) {
			return decision{reason: fmt.Sprintf("%s is denied by the network deny-list pattern %s", t, p.text)}
		}
	}
	var best *pattern
	nameMatched := false
	for _, p := range pol.allow {
		var m bool
		if t.addr.IsValid() {
			m = p.matchAddr(t.addr)
		} else {
			m = p.matchName(t.host)
		}
		if !m {
			continue
		}
		nameMatched = true
		if !p.matchPort(t.port) {
			continue
		}
		if best == nil || (p.exact() && !best.exact()) {
			best = p
		}
	}
	if best != nil {
		return decision{allowed: true, match: best, reason: "allowed by " + best.text}
	}
	add := t.hostPattern()
	if nameMatched {
		add = t.String()
	}
	if t.addr.IsValid() {
		return decision{reason: fmt.Sprintf("%s is an IP address, which only an IP or CIDR pattern allows (add --allow %s)", t, add)}
	}
	return decision{reason: fmt.Sprintf("%s is not in the network allow-list (add --allow %s)", t, add)}
}

// denyAddr returns the deny pattern matching a resolved address and port, if any.
func (pol *policy) denyAddr(a netip.Addr, port int) *pattern {
	for _, p := range pol.deny {
		if p.matchPort(port) && p.matchAddr(a) {
			return p
		}
	}
	return nil
}

var specialRanges = []struct {
	prefix netip.Prefix
	kind   string
}{
	{netip.MustParsePrefix("0.0.0.0/8"), "unspecified (this-network)"},
	{netip.MustParsePrefix("10.0.0.0/8"), "private"},
	{netip.MustParsePrefix("100.64.0.0/10"), "shared (CGNAT)"},
	{netip.MustParsePrefix("127.0.0.0/8"), "loopback"},
	{netip.MustParsePrefix("169.254.0.0/16"), "link-local"},
	{netip.MustParsePrefix("172.16.0.0/12"), "private"},
	{netip.MustParsePrefix("192.0.0.0/24"), "reserved (IETF protocol assignments)"},
	{netip.MustParsePrefix("192.168.0.0/16"), "private"},
	{netip.MustParsePrefix("198.18.0.0/15"), "reserved (benchmarking)"},
	{netip.MustParsePrefix("224.0.0.0/4"), "multicast"},
	{netip.MustParsePrefix("255.255.255.255/32"), "broadcast"},
	{netip.MustParsePrefix("240.0.0.0/4"), "reserved"},
	{netip.MustParsePrefix("::/128"), "unspecified"},
	{netip.MustParsePrefix("::1/128"), "loopback"},
	{netip.MustParsePrefix("::/96"), "reserved (IPv4-compatible)"},
	{netip.MustParsePrefix("100::/64"), "reserved (discard)"},
	{netip.MustParsePrefix("64:ff9b:1::/48"), "private (local NAT64)"},
	{netip.MustParsePrefix("fc00::/7"), "private (unique local)"},
	{netip.MustParsePrefix("fe80::/10"), "link-local"},
	{netip.MustParsePrefix("fec0::/10"), "private (site-local)"},
	{netip.MustParsePrefix("ff00::/8"), "multicast"},
}

var (
	nat64     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour = netip.MustParsePrefix("2002::/16")
)

// specialKind says what kind of address leading back into the host or its networks a is
// ("loopback", "private"..., ownKind for one of own, the host's interface addresses), or ""
// for a public address. IPv4 addresses embedded in IPv6 (mapped, NAT64, 6to4) are classified as the IPv4
// address they carry.
func specialKind(a netip.Addr, own []netip.Addr) string {
	a = a.WithZone("").Unmap()
	if a.Is6() && (nat64.Contains(a) || sixToFour.Contains(a)) {
		b := a.As16()
		var v4 [4]byte
		if nat64.Contains(a) {
			copy(v4[:], b[12:16])
		} else {
			copy(v4[:], b[2:6])
		}
		if k := specialKind(netip.AddrFrom4(v4), own); k != "" {
			return k
		}
		return ""
	}
	for _, r := range specialRanges {
		if r.prefix.Contains(a) {
			return r.kind
		}
	}
	if slices.Contains(own, a) {
		return ownKind
	}
	return ""
}

// ownKind is specialKind's kind of the host's own public addresses.
const ownKind = "own"

// describeKind is a kind of specialKind as a phrase: "a loopback address".
func describeKind(kind string) string {
	switch {
	case kind == ownKind:
		return "one of this host's own addresses"
	case strings.ContainsAny(kind[:1], "aeiou"):
		return "an " + kind + " address"
	}
	return "a " + kind + " address"
}
