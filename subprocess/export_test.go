package subprocess

import "time"

// ManualTimeouts makes the Spec.Timeout of every later Spawn of s fire when fire is called,
// not by a clock, so a test orders the timeout against the events it waits for.
func ManualTimeouts(s *Service) (fire func()) {
	ch := make(chan time.Time)
	var once bool
	s.after = func(time.Duration) (<-chan time.Time, func() bool) { return ch, func() bool { return true } }
	return func() {
		if !once {
			once = true
			close(ch)
		}
	}
}

// PumpsDone is closed once h's collected streams have been read to their end.
func PumpsDone(h *Handle) <-chan struct{} { return h.pumpsDone }

// LeaderDone is closed once h's leader has exited.
func LeaderDone(h *Handle) <-chan struct{} { return h.leaderDone }
