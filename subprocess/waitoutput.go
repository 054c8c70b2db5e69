package subprocess

import (
	"context"
)

// waitRead waits until read(from, max) has something to say (bytes from the offset on, bytes
// no longer available, or the stream's end), or ctx ends, and returns that read. The wake-up
// channel is taken before each look, so a write between the look and the wait is never
// missed.
func waitRead(ctx context.Context, c *collector, read func(from int64, max int) (Delta, error), from int64, max int) (Delta, error) {
	for {
		wake := c.updated()
		d, err := read(from, max)
		if err != nil || len(d.Data) > 0 || d.Dropped > 0 || d.Done {
			return d, err
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return d, ctx.Err()
		}
	}
}

// WaitOutput waits until collected stream s has bytes past offset from, or has ended, and then
// reads from there as ReadOutput does; it returns ctx's error (with an empty read) when ctx
// ends first. It never misses a write, however it races with the stream: follow a process
// with `for { d, err := h.WaitOutput(ctx, s, next, max); ...; next = d.Next }` until d.Done.
func (h *Handle) WaitOutput(ctx context.Context, s Stream, from int64, max int) (Delta, error) {
	if err := h.valid("wait output"); err != nil {
		return Delta{}, err
	}
	if err := checkCtx("wait output", s.String(), ctx); err != nil {
		return Delta{}, err
	}
	if _, err := h.ReadOutput(s, from, 1); err != nil {
		return Delta{}, err // the stream or the offset is wrong: say so now
	}
	return waitRead(ctx, h.collectors[s-1], func(from int64, max int) (Delta, error) { return h.ReadOutput(s, from, max) }, from, max)
}
