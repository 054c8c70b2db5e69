package lsp

import (
	"context"
)

// WaitReady waits until the server is ready to answer questions about uri: it has answered
// diagnostics for the document's current version (Diagnostics: a publish or a pull, which a
// server gives once it has loaded what the document needs) and has no work-done progress open
// ($/progress begun and not ended: gopls's "Loading packages", tsserver's project load). With
// an empty uri it waits for the progress only. Servers still loading answer references and
// workspace symbols with what they have seen so far (pyright, tsserver): call it first.
//
// uri must be open (ErrNotOpen otherwise). It fails with ctx's error or the connection's.
func (c *Client) WaitReady(ctx context.Context, uri string) error {
	if err := c.usable(ctx, "wait until ready"); err != nil {
		return err
	}
	if uri != "" {
		v, open := c.version(uri)
		if !open {
			return newError("wait until ready", uri, ErrNotOpen, nil)
		}
		if _, err := c.Diagnostics(ctx, uri, v); err != nil {
			return err
		}
	}
	for {
		c.diagMu.Lock()
		busy := len(c.progress) > 0
		changed := c.diagsChanged
		c.diagMu.Unlock()
		if !busy {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return &Error{Op: "wait until ready", Name: uri, Err: ctx.Err(), Hint: "work-done progress still open"}
		case <-c.done:
			return c.final
		}
	}
}
