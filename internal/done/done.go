// Package done answers, without blocking, whether a done channel (one that is only ever
// closed, never sent on) has been closed: the one helper every package of the kit uses for it.
package done

// Closed reports whether ch is closed. A nil channel is never closed.
func Closed[C ~<-chan struct{} | ~chan struct{}](ch C) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
