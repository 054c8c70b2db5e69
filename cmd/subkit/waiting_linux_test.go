package main

// waitingState is the state of a shell step whose program waits for terminal input: Linux
// tells.
const waitingState = "waiting_for_input"
