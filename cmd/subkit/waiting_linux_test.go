package main

import "time"

// waitingState is the state of a shell step whose program waits for terminal input: Linux
// tells.
const waitingState = "waiting_for_input"

// waitingYield is the yield of a step that waits for input: it ends at the wait, an event,
// so the yield is only a bound on a hung step.
const waitingYield = 2 * time.Minute
