// Package netproxy is an allow-list proxy for confined programs: HTTP (CONNECT tunnels and
// plain HTTP requests with absolute URIs, forwarded) and SOCKS5 (no authentication, CONNECT)
// on one listener, told apart by the first byte a client sends (0x05 is SOCKS5).
//
// Every destination is checked against a Config's Allow and Deny host patterns. The proxy
// resolves names itself and dials exactly the address it checked, so a name cannot resolve to
// one address at the check and another at the dial. Addresses that lead back into the host or
// its networks (loopback, link-local including the cloud metadata endpoint, private and shared
// ranges, unspecified, multicast, broadcast, the host's own interface addresses, and the
// IPv4-mapped forms of those) are refused unless the pattern that allowed the host names it
// exactly; a bare IP address is refused unless an IP or CIDR pattern allows it.
//
// A refused client gets an answer it shows its user: HTTP 403 whose status line and body carry
// a one-line reason naming the host and the pattern to add, or SOCKS5 reply 0x02 (not allowed
// by ruleset). Every allowed and refused connection is recorded, with the bytes carried each
// way, in a bounded log (Proxy.Records); Proxy.Refused sums the refusals by host and port.
//
// What the user of a client sees of a refusal differs by client, hence the reason in both the
// status line and the body, and Proxy.Refused for a report after the fact: curl prints a
// forwarded request's 403 body, but of a refused CONNECT only "CONNECT tunnel failed,
// response 403" (the reason line with -v); Python's urllib (and pip's requests) put the status
// line in the exception: "Tunnel connection failed: 403 NAME: example.com:443 is not in the
// network allow-list (add --allow example.com)"; a SOCKS5 client shows reply 2.
//
// What a client inside can abuse is bounded: the size of a request head and the time to send
// it, and the number of connections at once (the rest wait in the listener's backlog). Tunnels
// themselves never time out, so long downloads and fetches work. The package knows nothing of
// how clients reach its listener: any net.Listener (a Unix socket bridged into a sandbox, a
// loopback TCP port) is served the same way.
package netproxy
