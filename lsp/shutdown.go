package lsp

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/subkit/subkit/internal/done"
	"github.com/subkit/subkit/subprocess"
)

// Ended says how a server ended.
type Ended int

const (
	// EndedUnknown: the server had not ended when Shutdown returned (its ctx ended first).
	EndedUnknown Ended = iota
	// EndedClean: the server's whole tree left on its own after exit (or end of stdin)
	// within the grace.
	EndedClean
	// EndedTerminated: the client had to end the tree, and SIGTERM was enough.
	EndedTerminated
	// EndedKilled: the client had to end the tree, and the server took SIGKILL. (It says
	// what ended the server itself; the Service does not tell whether other members of the
	// tree needed SIGKILL.)
	EndedKilled
	// EndedCrashed: the server ended the connection (it exited, crashed, or closed its
	// stdout) before Shutdown began.
	EndedCrashed
)

func (e Ended) String() string {
	switch e {
	case EndedClean:
		return "clean"
	case EndedTerminated:
		return "terminated"
	case EndedKilled:
		return "killed"
	case EndedCrashed:
		return "crashed"
	}
	return "unknown"
}

// MarshalText renders e as its String.
func (e Ended) MarshalText() ([]byte, error) { return []byte(e.String()), nil }

// Exit is the report of Shutdown: how the server ended, its exit status and its stderr.
type Exit struct {
	Ended Ended
	Pid   int
	// Outcome is how the server's process ended, as its tree's result settled; ExitCode is
	// -1 until it has. TimedOut is never set (the Client gives the server no timeout:
	// Config.ShutdownTimeout and Config.ExitTimeout bound Shutdown's steps, and ShutdownErr
	// says which failed); Cancelled says the Client terminated the server before it ended by
	// itself (Ended then says terminated, killed or crashed); PipesHeld concerns its stderr.
	subprocess.Outcome
	// Stderr is what the collector kept of the server's stderr: the tail, the total byte
	// count, whether it was truncated, and the spill file when Config.StderrSpillBytes asked
	// for one (the caller removes it).
	Stderr subprocess.StreamResult
	// Escaped counts the processes that had left the server's process group (daemons that
	// called setsid, such as gopls's telemetry sidecar) and were still alive once the server
	// was gone; Shutdown ends them (SIGTERM, grace, SIGKILL). Ended does not count them: it
	// says how the server's own tree ended.
	Escaped int
	// ShutdownErr says why the polite path failed (no answer to shutdown within
	// Config.ShutdownTimeout, an error answer); nil when the server acknowledged shutdown or
	// had already ended.
	ShutdownErr error
}

// Shutdown ends the server: the shutdown request (bounded by Config.ShutdownTimeout), the
// exit notification, end of stdin, then up to Config.ExitTimeout for the server to leave (when
// it acknowledged shutdown; Config.Grace when it did not) and Config.Grace for the rest of its
// tree, then Terminate (SIGTERM, grace, SIGKILL). A server that leaves after exit is a clean
// end even when it left a frame unfinished on its stdout (gopls may die between a header and
// its body): Exit.ExitCode says how it left. Processes that left the tree's process group (setsid
// daemons, found by the Service's tree cookie on Linux) get the same grace and ladder. It
// returns once the tree is gone and every goroutine of the Client has ended, with a report of
// how the server ended and its stderr.
//
// It is safe to call more than once and concurrently: later calls return the same report. The
// error is nil when the tree is gone; it is ctx's error when ctx ended first (the termination
// goes on: call Shutdown or Close again to wait for it), or the termination's failure.
func (c *Client) Shutdown(ctx context.Context) (Exit, error) {
	if err := c.usable(ctx, "shutdown"); err != nil {
		return Exit{Ended: EndedUnknown, Outcome: subprocess.Outcome{ExitCode: -1}}, err
	}
	c.politeOnce.Do(func() { c.shutdownErr = c.polite(ctx) })
	var errs []error
	// The server itself first (a slow one that acknowledged shutdown gets ExitTimeout), then
	// whatever it left in its tree, within the grace.
	lctx, cancel := context.WithTimeout(ctx, c.exitWait())
	select {
	case <-c.h.Done():
	case <-lctx.Done():
	}
	cancel()
	wctx, cancel := context.WithTimeout(ctx, c.cfg.Grace)
	err := c.h.WaitForExit(wctx)
	cancel()
	if err != nil {
		if err := c.terminate(ctx); err != nil {
			errs = append(errs, newError("terminate", c.name, nil, err))
		}
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		return c.report(false), errors.Join(append(errs, ctxError("shutdown", c.name, ctx.Err()))...)
	}
	if err := c.endEscaped(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := c.teardown(ctx); err != nil {
		return c.report(true), errors.Join(append(errs, err)...)
	}
	c.closeOnce.Do(func() {
		if err := c.h.Close(); err != nil {
			errs = append(errs, newError("close", c.name, nil, err))
		}
	})
	return c.report(true), errors.Join(errs...)
}

// Close is Shutdown without a deadline of its own, for defer.
func (c *Client) Close() error {
	_, err := c.Shutdown(context.Background())
	return err
}

// polite sends shutdown and exit and closes stdin; it runs once.
func (c *Client) polite(ctx context.Context) error {
	c.mu.Lock()
	c.closing = true
	alive := c.failed == nil
	c.mu.Unlock()
	var err error
	if alive {
		sctx, cancel := context.WithTimeout(ctx, c.cfg.ShutdownTimeout)
		err = c.Call(sctx, "shutdown", nil, nil)
		cancel()
		if err == nil {
			c.acked.Store(true)
		}
		if !errors.Is(err, ErrClosed) && !errors.Is(err, ErrServerExited) {
			ectx, cancel := context.WithTimeout(ctx, c.cfg.Grace)
			if _, nerr := c.notify(ectx, "exit", nil, func() { c.exitSent.Store(true) }); err == nil {
				err = nerr
			}
			cancel()
		}
	}
	c.mu.Lock()
	if c.failed == nil {
		c.failed = newError("call", c.name, ErrClosed, nil)
	}
	c.mu.Unlock()
	c.stdin.Close() // some servers (gopls) leave only once their input ends
	return err
}

// abort ends a server that failed its handshake.
func (c *Client) abort() {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	c.stdin.Close()
	c.terminate(context.Background())
	<-c.done
	c.endEscaped(context.Background())
	c.teardown(context.Background())
	c.closeOnce.Do(func() { c.h.Close() })
}

// endEscaped ends the processes that left the server's process group (setsid daemons such as
// gopls's telemetry sidecar), which the Service finds by the tree's cookie, and counts them.
// Call it once the group is gone.
func (c *Client) endEscaped(ctx context.Context) error {
	left, err := c.h.Members(ctx)
	if errors.Is(err, subprocess.ErrUnsupported) || (err == nil && len(left) == 0) {
		return nil
	}
	c.escaped.Add(int64(len(left)))
	if err := c.h.Terminate(ctx); err != nil {
		return &Error{Op: "end escaped processes", Name: c.name, Err: err, Hint: "they had left the server's process group"}
	}
	return nil
}

// terminate ends the tree and records that the client had to.
func (c *Client) terminate(ctx context.Context) error {
	if c.treeGone() {
		return nil
	}

	c.terminated.Store(true)
	return c.h.Terminate(ctx)
}

func (c *Client) treeGone() bool {
	if !done.Closed(c.h.Done()) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	return c.h.WaitForExit(ctx) == nil
}

// teardown stops the writer, the dispatcher and the request handlers, and waits for them.
// Call it only once done is closed (the reader has ended).
func (c *Client) teardown(ctx context.Context) error {
	c.stopOnce.Do(func() {
		close(c.stop)
		c.cancelReq()
		if c.watcher != nil {
			c.watcher.close()
		}
		c.stdin.Close()
		go func() {
			c.handlerWG.Wait()
			close(c.handlersDone)
		}()
	})
	for _, w := range []struct {
		what string
		ch   chan struct{}
	}{{"the writer", c.writerDone}, {"OnNotification", c.dispatchDone}, {"request handlers", c.handlersDone}} {
		select {
		case <-w.ch:
		case <-ctx.Done():
			return ctxError("shutdown", c.name, fmt.Errorf("waiting for %s: %w", w.what, ctx.Err()))
		}
	}
	return nil
}

// report builds the Exit; settled says the handle's result is final.
func (c *Client) report(settled bool) Exit {
	e := Exit{Pid: c.h.Pid(), Outcome: subprocess.Outcome{ExitCode: -1}, ShutdownErr: c.shutdownErr, Escaped: int(c.escaped.Load())}
	if !settled {
		return e
	}
	res, _ := c.h.Wait(context.Background())
	e.Outcome, e.Stderr = res.Outcome, res.Stderr
	c.mu.Lock()
	crashed := c.crashed
	c.mu.Unlock()
	switch {
	case crashed:
		e.Ended = EndedCrashed
	case !c.terminated.Load():
		e.Ended = EndedClean
	case res.Signal == "SIGKILL":
		e.Ended = EndedKilled
	default:
		e.Ended = EndedTerminated
	}
	return e
}
