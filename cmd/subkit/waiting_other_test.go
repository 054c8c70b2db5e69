//go:build !linux

package main

import "time"

// waitingState is the state of a shell step whose program waits for terminal input: only
// Linux tells; elsewhere the step runs until the yield.
const waitingState = "running"

// waitingYield is the yield of a step that waits for input: the step runs until it, so it is
// short.
const waitingYield = 3 * time.Second
