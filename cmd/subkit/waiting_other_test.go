//go:build !linux

package main

// waitingState is the state of a shell step whose program waits for terminal input: only
// Linux tells; elsewhere the step runs until the yield.
const waitingState = "running"
