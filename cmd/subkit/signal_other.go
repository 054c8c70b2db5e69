//go:build !unix

package main

// signalNumber: results carry no signal names on this platform.
func signalNumber(string) int { return 0 }
