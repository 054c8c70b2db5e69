//go:build !linux

package shell

import "time"

// waitingState is the state of a Step whose program waits for terminal input: only Linux
// tells, elsewhere it runs until the yield.
const waitingState = StateRunning

// waitYield is a yield for a Step that waits for input: waited out here, so a short one.
const waitYield = 200 * time.Millisecond
