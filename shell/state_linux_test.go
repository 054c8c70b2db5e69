package shell

import "time"

// waitingState is the state of a Step whose program waits for terminal input: Linux tells.
const waitingState = StateWaitingInput

// waitYield is a yield for a Step that waits for input: a generous one, never waited out here.
const waitYield = time.Minute
