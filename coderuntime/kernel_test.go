package coderuntime

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A frame written whole just as its ctx ends is sent, and the write deadline that ctx's end set
// is lifted: the next send (the probe of the interrupt that follows a cancelled cell) is not
// refused.
func TestKernelSendCtxEndsAfterWholeFrame(t *testing.T) {
	a, b := net.Pipe()
	t.Cleanup(func() {
		a.Close()
		b.Close()
	})
	go io.Copy(io.Discard, b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	conn := &endsCtxOnWrite{Conn: a, cancel: cancel, cut: make(chan struct{})}
	k := &kernel{conn: conn}
	require.NoError(t, k.send(ctx, &message{Type: "execute", ID: "c1"}))
	require.NoError(t, k.send(context.Background(), &message{Type: "probe", ID: "p1"}))
}

// endsCtxOnWrite ends a ctx once its first write is whole, and returns once that ctx's end has
// set the write deadline.
type endsCtxOnWrite struct {
	net.Conn
	cancel context.CancelFunc
	write  sync.Once
	set    sync.Once
	cut    chan struct{}
}

func (c *endsCtxOnWrite) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.write.Do(func() {
		c.cancel()
		<-c.cut
	})
	return n, err
}

func (c *endsCtxOnWrite) SetWriteDeadline(d time.Time) error {
	err := c.Conn.SetWriteDeadline(d)
	if !d.IsZero() {
		c.set.Do(func() { close(c.cut) })
	}
	return err
}
