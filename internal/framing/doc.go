// Package framing reads and writes messages framed by a Content-Length header: the base
// protocol of the Language Server Protocol and of other JSON-RPC-over-stdio tools.
//
//	Content-Length: 17\r\n
//	Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n
//	\r\n
//	{"jsonrpc":"2.0"}
//
// Header names are case-insensitive; every header but Content-Length is ignored. A Reader
// holds at most one header line (4 KiB) and one body (at most its cap) in memory: a frame
// announcing more than the cap fails with a *TooLargeError before any of its body is read. End
// of input between frames is io.EOF; anything else that is not a whole frame wraps
// ErrMalformed. After either error the stream is out of step and the Reader must not be used
// again.
package framing
