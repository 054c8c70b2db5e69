//go:build unix

package main

import "golang.org/x/sys/unix"

// signalNumber turns a signal name from a Result into its number (0 when unknown).
func signalNumber(name string) int { return int(unix.SignalNum(name)) }
