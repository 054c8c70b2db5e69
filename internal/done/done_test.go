package done_test

import (
	"testing"

	"github.com/subkit/subkit/internal/done"
)

func TestClosed(t *testing.T) {
	ch := make(chan struct{})
	var recv <-chan struct{} = ch
	if done.Closed(ch) || done.Closed(recv) {
		t.Fatal("an open channel reads as closed")
	}
	close(ch)
	if !done.Closed(ch) || !done.Closed(recv) {
		t.Fatal("a closed channel reads as open")
	}
	if done.Closed((chan struct{})(nil)) {
		t.Fatal("a nil channel reads as closed")
	}
}
