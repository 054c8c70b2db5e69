// Package backoff is the kit's one back-off poller. Every wait that has no event to wait on
// (a process group that may still have members, a job object that may still hold processes,
// a request the other side asked to retry) probes with it: the first pauses are short, so a
// short wait ends within milliseconds, and they double up to a cap, so a wait of hours costs
// next to nothing. Every wait takes a context and ends with its error when it is done.
package backoff

import (
	"context"
	"time"
)

// DefaultFirst is the first pause when Policy.First is zero.
const DefaultFirst = 500 * time.Microsecond

// Policy is a back-off schedule. The zero value is the schedule for waiting on processes:
// 500 µs first, doubling, with a cap that grows with the time waited (see Policy.Max).
type Policy struct {
	// First is the first pause; 0 means DefaultFirst.
	First time.Duration
	// Max caps every pause. 0 means a cap that grows with the time waited: 2 ms in the first
	// second, 10 ms up to 10 s, 50 ms up to a minute, 250 ms after.
	Max time.Duration
}

func (p Policy) first() time.Duration {
	if p.First > 0 {
		return p.First
	}
	return DefaultFirst
}

func (p Policy) limit(waited time.Duration) time.Duration {
	if p.Max > 0 {
		return p.Max
	}
	switch {
	case waited < time.Second:
		return 2 * time.Millisecond
	case waited < 10*time.Second:
		return 10 * time.Millisecond
	case waited < time.Minute:
		return 50 * time.Millisecond
	}
	return 250 * time.Millisecond
}

// Nth returns the n-th pause (n from 0) of a wait that has only just begun: First doubled n
// times, capped as Max says.
func (p Policy) Nth(n int) time.Duration {
	d := p.first()
	c := max(p.limit(0), d)
	for ; n > 0 && d < c; n-- {
		d = min(2*d, c)
	}
	return d
}

// Poller hands out the pauses of one wait. Its zero value is not usable; get one from
// Policy.Start. A Poller is for one goroutine.
type Poller struct {
	p     Policy
	start time.Time
	next  time.Duration
	t     *time.Timer
}

// Start begins a wait under p.
func (p Policy) Start() *Poller {
	return &Poller{p: p, start: time.Now(), next: p.first()}
}

// Wait pauses for the next pause of the schedule and returns nil, or returns ctx's error as
// soon as ctx ends.
func (w *Poller) Wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d := w.Next()
	if w.t == nil {
		w.t = time.NewTimer(d)
	} else {
		w.t.Reset(d)
	}
	select {
	case <-ctx.Done():
		w.t.Stop()
		return ctx.Err()
	case <-w.t.C:
		return nil
	}
}

// Next returns the next pause of the schedule and moves past it, for a caller that waits in
// a select of its own (on events, with the poll as the fallback).
func (w *Poller) Next() time.Duration {
	d := w.next
	w.next = max(min(2*d, w.p.limit(time.Since(w.start))), w.p.first())
	return d
}

// Until calls probe until it reports done or fails, pausing between calls as p says. It
// returns nil once done, probe's error, or ctx's error if ctx ends first (probe is always
// called at least once, so a wait that is already over succeeds even under an ended ctx).
func Until(ctx context.Context, p Policy, probe func() (done bool, err error)) error {
	var w *Poller
	for {
		done, err := probe()
		if err != nil {
			return err
		}
		if done {
			return nil
		}
		if w == nil {
			w = p.Start()
		}
		if err := w.Wait(ctx); err != nil {
			return err
		}
	}
}

// Sleep pauses for d, or returns ctx's error as soon as ctx ends.
func Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
