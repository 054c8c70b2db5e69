package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/subkit/subkit/subprocess"
)

// DiagnosticSet is the server's diagnostics of one document, with the version they answer.
type DiagnosticSet struct {
	URI string `json:"uri"`
	// Version is the document version the set answers: the one the server named in
	// publishDiagnostics, or for a pulled set the version the client had sent when it asked.
	// A publish without a version (typescript-language-server sends none) is taken to answer
	// the version current when it arrives, and Versioned is false; 0 for a document the
	// client has not opened.
	Version int `json:"version"`
	// Versioned says that the server named the version (or the set was pulled): Version is
	// then exact.
	Versioned bool `json:"versioned"`
	// Pulled says the set answers a textDocument/diagnostic request.
	Pulled      bool         `json:"pulled,omitempty"`
	Diagnostics []Diagnostic `json:"diagnostics"`

	resultID string    // of a pulled set, sent back as previousResultId
	at       time.Time // arrival
}

func (s DiagnosticSet) clone() DiagnosticSet {
	s.Diagnostics = slices.Clone(s.Diagnostics)
	if s.Diagnostics == nil {
		s.Diagnostics = []Diagnostic{}
	}
	return s
}

// storeDiagnostics keeps a publishDiagnostics. A versioned publish older than the set held is
// stale and dropped.
func (c *Client) storeDiagnostics(params json.RawMessage) {
	var p struct {
		URI         string       `json:"uri"`
		Version     *int         `json:"version"`
		Diagnostics []Diagnostic `json:"diagnostics"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.URI == "" {
		c.log.Warn("lsp: ignoring unreadable textDocument/publishDiagnostics", "err", err)
		return
	}
	set := DiagnosticSet{URI: p.URI, Diagnostics: p.Diagnostics, at: time.Now()}
	if p.Version != nil {
		set.Version, set.Versioned = *p.Version, true
	} else {
		set.Version, _ = c.version(p.URI)
	}
	c.keep(set, true)
}

// keep stores set unless it is older than what is held.
func (c *Client) keep(set DiagnosticSet, published bool) {
	if set.Diagnostics == nil {
		set.Diagnostics = []Diagnostic{}
	}
	c.diagMu.Lock()
	defer c.diagMu.Unlock()
	if published {
		c.lastPublish = set.at
	}
	if old, ok := c.diags[set.URI]; ok && old.Versioned && set.Version < old.Version {
		c.log.Debug("lsp: dropping diagnostics for an older version", "uri", set.URI, "version", set.Version, "held", old.Version)
	} else {
		c.diags[set.URI] = set
	}
	close(c.diagsChanged)
	c.diagsChanged = make(chan struct{})
}

// LastDiagnostics returns the diagnostics last stored for uri (published, or pulled by
// Diagnostics), and whether there are any.
func (c *Client) LastDiagnostics(uri string) (DiagnosticSet, bool) {
	if c == nil || c.diags == nil {
		return DiagnosticSet{}, false
	}
	c.diagMu.Lock()
	defer c.diagMu.Unlock()
	d, ok := c.diags[uri]
	if !ok {
		return DiagnosticSet{}, false
	}
	return d.clone(), true
}

// AllDiagnostics returns the last diagnostics of every URI the server published for (an empty
// list when it cleared them) or that Diagnostics pulled.
func (c *Client) AllDiagnostics() map[string]DiagnosticSet {
	if c == nil || c.diags == nil {
		return nil
	}
	c.diagMu.Lock()
	defer c.diagMu.Unlock()
	out := make(map[string]DiagnosticSet, len(c.diags))
	for u, d := range c.diags {
		out[u] = d.clone()
	}
	return out
}

// WaitDiagnostics waits until the diagnostics last stored for uri satisfy ok (nil: any set),
// and returns them, whatever version they answer (Diagnostics waits for a version). It fails
// with ctx's error, or with the connection's error when the server ends first.
func (c *Client) WaitDiagnostics(ctx context.Context, uri string, ok func([]Diagnostic) bool) ([]Diagnostic, error) {
	if err := c.usable(ctx, "wait for diagnostics"); err != nil {
		return nil, err
	}
	for {
		c.diagMu.Lock()
		d, have := c.diags[uri]
		changed := c.diagsChanged
		c.diagMu.Unlock()
		if have && (ok == nil || ok(d.Diagnostics)) {
			return d.clone().Diagnostics, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, fmt.Errorf("lsp: waiting for diagnostics of %s: %w", uri, ctx.Err())
		case <-c.done:
			if d, have := c.LastDiagnostics(uri); have && (ok == nil || ok(d.Diagnostics)) {
				return d.Diagnostics, nil
			}
			return nil, c.final
		}
	}
}

// Diagnostics returns the diagnostics of uri for version or a later one (version 0: any
// version), never an older set.
//
// When the server offers pull diagnostics (diagnosticProvider, or a dynamic registration of
// textDocument/diagnostic) it asks with textDocument/diagnostic, sending the result id of the
// last pulled set so the server can answer "unchanged", and retries while the server answers
// ServerCancelled or ContentModified; the answer is for the version the client had sent when
// it asked. Otherwise it waits for publishDiagnostics: for a set the server published for
// version or later; from a server that publishes without versions, for a set that arrived
// once version was sent and has then been left alone for Config.UnversionedSettle (such a
// server gives no way to tell a late set for an older version from a fresh one).
//
// A server may publish more than once for one version (gopls: compiler errors, then its
// analyses): the first set for the version answers. WaitQuiet, then LastDiagnostics, gives a
// settled set. Diagnostics fails with ErrNotOpen when version is above the document's current
// version (it could never arrive), with ctx's error, or with the connection's error.
func (c *Client) Diagnostics(ctx context.Context, uri string, version int) (DiagnosticSet, error) {
	if err := c.usable(ctx, "diagnostics"); err != nil {
		return DiagnosticSet{}, err
	}
	if version < 0 {
		return DiagnosticSet{}, fmt.Errorf("lsp: diagnostics of %s: negative version %d (%w)", uri, version, subprocess.ErrInvalid)
	}
	if cur, _ := c.version(uri); version > cur {
		return DiagnosticSet{}, fmt.Errorf("lsp: diagnostics of %s for version %d: the client sent version %d at most: %w", uri, version, cur, ErrNotOpen)
	}
	if id, ok := c.pullIdentifier(); ok {
		return c.pull(ctx, uri, id)
	}
	return c.waitPushed(ctx, uri, version)
}

// PullDiagnostics says whether the server takes textDocument/diagnostic requests.
func (c *Client) PullDiagnostics() bool {
	if c == nil || c.regs == nil {
		return false
	}
	_, ok := c.pullIdentifier()
	return ok
}

// pullIdentifier says whether the server offers pull diagnostics, and the identifier of its
// first provider.
func (c *Client) pullIdentifier() (string, bool) {
	var caps struct {
		Provider *struct {
			Identifier string `json:"identifier"`
		} `json:"diagnosticProvider"`
	}
	if json.Unmarshal(c.init.Capabilities, &caps) == nil && caps.Provider != nil {
		return caps.Provider.Identifier, true
	}
	c.docMu.Lock()
	defer c.docMu.Unlock()
	ids := make([]string, 0, len(c.regs))
	for id, r := range c.regs {
		if r.Method == "textDocument/diagnostic" {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return "", false
	}
	slices.Sort(ids)
	var opts struct {
		Identifier string `json:"identifier"`
	}
	json.Unmarshal(c.regs[ids[0]].RegisterOptions, &opts)
	return opts.Identifier, true
}

// pullRetryPause is the first pause before asking again after ServerCancelled or
// ContentModified; it doubles up to a second.
const pullRetryPause = 20 * time.Millisecond

func (c *Client) pull(ctx context.Context, uri, identifier string) (DiagnosticSet, error) {
	pause := pullRetryPause
	for {
		set, retry, err := c.pullOnce(ctx, uri, identifier)
		if !retry {
			return set, err
		}
		t := time.NewTimer(pause)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return DiagnosticSet{}, fmt.Errorf("lsp: pull diagnostics of %s: %w (last answer: %w)", uri, ctx.Err(), err)
		}
		pause = min(2*pause, time.Second)
	}
}

func (c *Client) pullOnce(ctx context.Context, uri, identifier string) (set DiagnosticSet, retry bool, err error) {
	held, _ := c.LastDiagnostics(uri)
	params := map[string]any{"textDocument": map[string]string{"uri": uri}}
	if identifier != "" {
		params["identifier"] = identifier
	}
	if held.Pulled && held.resultID != "" {
		params["previousResultId"] = held.resultID
	}
	// The version is read and the request handed over under the document lock: the server
	// reads them in that order, so the answer is for that version.
	if err := c.lockDocs(ctx); err != nil {
		return DiagnosticSet{}, false, err
	}
	version, _ := c.version(uri)
	p, _, err := c.startCall(ctx, "textDocument/diagnostic", params)
	c.unlockDocs()
	if err != nil {
		return DiagnosticSet{}, false, err
	}
	var report struct {
		Kind     string       `json:"kind"`
		ResultID string       `json:"resultId"`
		Items    []Diagnostic `json:"items"`
	}
	if err := p.await(ctx, &report); err != nil {
		var re *RPCError
		if errors.As(err, &re) && (re.Code == CodeServerCancelled || re.Code == CodeContentModified) {
			var data struct {
				Retrigger *bool `json:"retriggerRequest"`
			}
			json.Unmarshal(re.Data, &data)
			if data.Retrigger == nil || *data.Retrigger {
				return DiagnosticSet{}, true, err
			}
		}
		return DiagnosticSet{}, false, err
	}
	set = DiagnosticSet{URI: uri, Version: version, Versioned: true, Pulled: true, Diagnostics: report.Items,
		resultID: report.ResultID, at: time.Now()}
	if report.Kind == "unchanged" {
		if !held.Pulled || held.resultID != report.ResultID {
			// Nothing to reuse (it cannot happen with a correct server): ask for the whole set.
			c.diagMu.Lock()
			if d, ok := c.diags[uri]; ok {
				d.resultID = ""
				c.diags[uri] = d
			}
			c.diagMu.Unlock()
			return DiagnosticSet{}, true, fmt.Errorf("lsp: pull diagnostics of %s: unchanged from an unknown result %q", uri, report.ResultID)
		}
		set.Diagnostics = held.Diagnostics
	}
	c.keep(set, false)
	return set.clone(), false, nil
}

// waitPushed waits for a published set for version or later.
func (c *Client) waitPushed(ctx context.Context, uri string, version int) (DiagnosticSet, error) {
	var settle *time.Timer
	defer func() {
		if settle != nil {
			settle.Stop()
		}
	}()
	for {
		if id, ok := c.pullIdentifier(); ok { // registered while we waited
			return c.pull(ctx, uri, id)
		}
		c.diagMu.Lock()
		d, have := c.diags[uri]
		changed := c.diagsChanged
		c.diagMu.Unlock()
		var wake <-chan time.Time
		if have && d.Version >= version {
			if d.Versioned || version == 0 {
				return d.clone(), nil
			}
			rest := c.cfg.UnversionedSettle - time.Since(d.at)
			if rest <= 0 {
				return d.clone(), nil
			}
			if settle == nil {
				settle = time.NewTimer(rest)
			} else {
				settle.Reset(rest)
			}
			wake = settle.C
		}
		select {
		case <-changed:
		case <-wake:
		case <-ctx.Done():
			return DiagnosticSet{}, fmt.Errorf("lsp: waiting for diagnostics of %s (version %d): %w", uri, version, ctx.Err())
		case <-c.done:
			if d, have := c.LastDiagnostics(uri); have && d.Version >= version {
				return d, nil
			}
			return DiagnosticSet{}, c.final
		}
	}
}

// WaitQuiet waits until the server has published no diagnostics, for any document, for
// quiet (counted from the call or the last publish, whichever is later): the settle rule of editors and of `subkit lsp`. It returns nil then, ctx's error when
// ctx ends first, or the connection's error when the server ends (nothing more will come).
// Pulled sets do not count: a server that only answers pulls is quiet at once.
func (c *Client) WaitQuiet(ctx context.Context, quiet time.Duration) error {
	if err := c.usable(ctx, "wait for quiet diagnostics"); err != nil {
		return err
	}
	if quiet <= 0 {
		return fmt.Errorf("lsp: WaitQuiet: quiet must be positive, not %v (%w)", quiet, subprocess.ErrInvalid)
	}
	begin := time.Now()
	t := time.NewTimer(quiet)
	defer t.Stop()
	for {
		c.diagMu.Lock()
		last, changed := c.lastPublish, c.diagsChanged
		c.diagMu.Unlock()
		if last.Before(begin) {
			last = begin
		}
		rest := quiet - time.Since(last)
		if rest <= 0 {
			return nil
		}
		t.Reset(rest)
		select {
		case <-t.C:
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("lsp: waiting for diagnostics to settle: %w", ctx.Err())
		case <-c.done:
			return c.final
		}
	}
}
