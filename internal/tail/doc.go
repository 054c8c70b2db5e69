// Package tail keeps the last bytes of a stream in a fixed-size ring and serves reads in
// whole-stream byte offsets.
package tail
