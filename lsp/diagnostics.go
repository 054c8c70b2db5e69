package lsp

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/subkit/subkit/internal/backoff"
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
	Pulled bool `json:"pulled,omitempty"`
	// Ordered says that the set was published without a version and Diagnostics took it for
	// Version by ordering: it arrived after the server answered a request sent after that
	// version (or once the server was quiet after such an answer, with no work-done progress
	// open). See Diagnostics for what that guarantees.
	Ordered bool `json:"ordered,omitempty"`
	// Reused says that Diagnostics answered Version with the set it had answered for an
	// identical text of the document, nothing else having changed since (no other document,
	// no file event): servers publish nothing for a text they have already checked.
	Reused      bool         `json:"reused,omitempty"`
	Diagnostics []Diagnostic `json:"diagnostics"`

	resultID string    // of a pulled set, sent back as previousResultId
	at       time.Time // arrival
	seq      uint64    // of a published set: Client.pubSeq at its arrival
	fileGen  uint64    // Client.fileGen at its arrival (a pull: when it was asked)
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
	p.URI = c.openURI(p.URI)
	set := DiagnosticSet{URI: p.URI, Diagnostics: p.Diagnostics, at: time.Now()}
	if p.Version != nil {
		set.Version, set.Versioned = *p.Version, true
	} else {
		set.Version, _ = c.version(p.URI)
	}
	c.keep(set, true)
	if set.Versioned {
		c.remember(p.URI, set) // the answer for this text, should the document come back to it
	}
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
		c.pubSeq++
		set.seq = c.pubSeq
		set.fileGen = c.fileGen
	}
	if old, ok := c.diags[set.URI]; ok && old.Versioned && set.Version < old.Version {
		c.log.Debug("lsp: dropping diagnostics for an older version", "uri", set.URI, "version", set.Version, "held", old.Version)
	} else {
		c.diags[set.URI] = set
	}
	close(c.diagsChanged)
	c.diagsChanged = make(chan struct{})
}

// AllDiagnostics returns the last diagnostics of every URI the server published for (an empty
// list when it cleared them, documents the client never opened included) or that Diagnostics
// pulled, whatever version they answer: a snapshot of what the server reported.
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

// held returns the set stored for uri, when there is one.
func (c *Client) held(uri string) (DiagnosticSet, bool) {
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

// DiagnosticsOption changes how Diagnostics reads a set.
type DiagnosticsOption int

// NoWait makes Diagnostics return at once, without asking the server: the set held now for
// the URI when it answers the version asked or a later one, else an error wrapping
// ErrNoDiagnostics. A set published without a version answers the version current at its
// arrival (Versioned false): after WaitQuiet it is the server's settled word.
const NoWait DiagnosticsOption = 1

// ErrNoDiagnostics: Diagnostics with NoWait found no set for the version asked (yet).
var ErrNoDiagnostics = errors.New("no diagnostics held for that version")

// Diagnostics returns the diagnostics of uri for version or a later one (version 0: any
// version), never an older set.
//
// When the server offers pull diagnostics (diagnosticProvider, or a dynamic registration of
// textDocument/diagnostic) it asks with textDocument/diagnostic, sending the result id of the
// last pulled set so the server can answer "unchanged", and retries while the server answers
// ServerCancelled or ContentModified; the answer is for the version the client had sent when
// it asked. Otherwise it waits for publishDiagnostics, and what it guarantees depends on the
// server:
//
//   - Versioned publishes (gopls, clangd): the set the server published for version or later.
//     Exact.
//   - Publishes without a version (typescript-language-server, yaml-language-server, pylsp):
//     a set that arrived after the server had read the current text. Once the set is there,
//     the client sends a request that needs the current text (a hover at the document's start,
//     or a $/ request the server answers MethodNotFound when it offers no hover) and takes the
//     first set that arrives after its answer; when none comes, it takes the last set that
//     arrived after the current version was sent, once the server has published nothing for
//     Config.UnversionedSettle after that answer and has no work-done progress open. A server
//     that handles messages in order (JSON-RPC servers do) never gets an older text's set
//     taken this way, however late it publishes; one that answers requests at once and
//     publishes an older text's set long after may still be misread: prefer servers that name
//     versions. Such sets are marked Ordered.
//   - A text identical to one already answered (a revert), nothing else having changed since,
//     is answered at once from that answer (Reused): servers publish nothing for a text they
//     have checked already.
//
// A server may publish more than once for one version (gopls: compiler errors, then its
// analyses): the first set for the version answers. WaitQuiet, then Diagnostics with NoWait,
// gives a settled set. Diagnostics fails with ErrNotOpen when version is above the document's
// current version (it could never arrive), with ctx's error, or with the connection's error.
// Version 0 asks for any set, of any document the server published for, open or not.
func (c *Client) Diagnostics(ctx context.Context, uri string, version int, opts ...DiagnosticsOption) (DiagnosticSet, error) {
	if err := c.usable(ctx, "diagnostics"); err != nil {
		return DiagnosticSet{}, err
	}
	if version < 0 {
		return DiagnosticSet{}, invalidArg("diagnostics", uri, fmt.Sprintf("negative version %d", version))
	}
	if cur, _ := c.version(uri); version > cur {
		return DiagnosticSet{}, newError("diagnostics", uri, ErrNotOpen,
			fmt.Errorf("version %d asked, the client sent version %d at most", version, cur))
	}
	if slices.Contains(opts, NoWait) {
		if d, ok := c.held(uri); ok && d.Version >= version {
			return d, nil
		}
		return DiagnosticSet{}, newError("diagnostics", uri, ErrNoDiagnostics, fmt.Errorf("version %d", version))
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

// pullRetry is the back-off between asks after ServerCancelled or ContentModified: 20ms
// first, doubling up to a second.
var pullRetry = backoff.Policy{First: 20 * time.Millisecond, Max: time.Second}

func (c *Client) pull(ctx context.Context, uri, identifier string) (DiagnosticSet, error) {
	var w *backoff.Poller
	for {
		set, retry, err := c.pullOnce(ctx, uri, identifier)
		if !retry {
			return set, err
		}
		if w == nil {
			w = pullRetry.Start()
		}
		if werr := w.Wait(ctx); werr != nil {
			return DiagnosticSet{}, ctxError("pull diagnostics", uri, fmt.Errorf("%w (last answer: %w)", werr, err))
		}
	}
}

func (c *Client) pullOnce(ctx context.Context, uri, identifier string) (set DiagnosticSet, retry bool, err error) {
	held, _ := c.held(uri)
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
	c.diagMu.Lock()
	fileGen := c.fileGen
	c.diagMu.Unlock()
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
		resultID: report.ResultID, at: time.Now(), fileGen: fileGen}
	if report.Kind == "unchanged" {
		if !held.Pulled || held.resultID != report.ResultID {
			// Nothing to reuse (it cannot happen with a correct server): ask for the whole set.
			c.diagMu.Lock()
			if d, ok := c.diags[uri]; ok {
				d.resultID = ""
				c.diags[uri] = d
			}
			c.diagMu.Unlock()
			return DiagnosticSet{}, true, newError("pull diagnostics", uri, nil, fmt.Errorf("unchanged from an unknown result %q", report.ResultID))
		}
		set.Diagnostics = held.Diagnostics
	}
	c.keep(set, false)
	return set.clone(), false, nil
}

// waitPushed waits for a published set for version or later.
func (c *Client) waitPushed(ctx context.Context, uri string, version int) (DiagnosticSet, error) {
	if set, ok := c.reuse(uri, version); ok {
		return set, nil
	}
	ctx, cancel := context.WithCancel(ctx) // ends a barrier still under way when we return
	defer cancel()
	var settle *time.Timer
	defer func() {
		if settle != nil {
			settle.Stop()
		}
	}()
	var barrier chan barrierResult // the ordering request, once sent
	var barrierGen uint64          // fileGen when it was sent
	var answered bool              // its answer is in
	var answerSeq uint64           // pubSeq when the answer arrived
	var answerAt time.Time
	for {
		if id, ok := c.pullIdentifier(); ok { // registered while we waited
			return c.pull(ctx, uri, id)
		}
		c.diagMu.Lock()
		d, have := c.diags[uri]
		changed := c.diagsChanged
		busy := len(c.progress) > 0
		fileGen := c.fileGen
		c.diagMu.Unlock()
		var wake <-chan time.Time
		if have && d.Version >= version {
			fresh := d.fileGen == fileGen // no file event since it arrived
			exact := d.Versioned || d.Ordered || d.Reused
			if fresh && (exact || version == 0) {
				c.remember(uri, d)
				return d.clone(), nil
			}
			// Published without a version, or before files changed on disk: order it against a
			// request that needs the current text (and files).
			if barrier == nil || barrierGen != fileGen {
				barrier, barrierGen, answered = c.startBarrier(ctx, uri), fileGen, false
			}
			if answered {
				quiet := c.cfg.UnversionedSettle
				if !fresh {
					quiet = max(quiet, c.cfg.FileEventSettle)
				}
				switch {
				case d.seq > answerSeq:
					return c.acceptOrdered(uri, d, barrierGen), nil
				case (exact || d.seq > c.sentSeq(uri)) && !busy:
					rest := quiet - time.Since(answerAt)
					if rest <= 0 {
						return c.acceptOrdered(uri, d, barrierGen), nil
					}
					if settle == nil {
						settle = time.NewTimer(rest)
					} else {
						settle.Reset(rest)
					}
					wake = settle.C
				}
			}
		}
		select {
		case <-changed:
		case <-wake:
		case r := <-barrier:
			if r.err != nil {
				if ctx.Err() != nil {
					return DiagnosticSet{}, ctxError("wait for diagnostics", uri, ctx.Err())
				}
				return DiagnosticSet{}, r.err
			}
			answered, answerSeq, answerAt = true, r.seq, time.Now()
			barrier = make(chan barrierResult) // never ready: the answer is in
		case <-ctx.Done():
			return DiagnosticSet{}, ctxError("wait for diagnostics", uri, ctx.Err())
		case <-c.done:
			if d, have := c.held(uri); have && d.Version >= version && (d.Versioned || d.Ordered || version == 0) {
				return d, nil
			}
			return DiagnosticSet{}, c.final
		}
	}
}

// barrierResult is the outcome of an ordering request: pubSeq when its answer arrived.
type barrierResult struct {
	seq uint64
	err error // the connection failed, or ctx ended
}

// startBarrier sends a request that needs uri's current text, so the server answers it only
// after reading every change sent before it: a hover at the document's start when the server
// offers hovers, else a $/ request, which a server answers MethodNotFound. Any answer, error
// or not, is the barrier.
func (c *Client) startBarrier(ctx context.Context, uri string) chan barrierResult {
	ch := make(chan barrierResult, 1)
	method, params := "$/subkit/barrier", any(map[string]string{"uri": uri})
	var caps struct {
		Hover json.RawMessage `json:"hoverProvider"`
	}
	if json.Unmarshal(c.init.Capabilities, &caps) == nil && len(caps.Hover) > 0 && string(caps.Hover) != "false" && string(caps.Hover) != "null" {
		method, params = "textDocument/hover", map[string]any{"textDocument": map[string]string{"uri": uri}, "position": Position{}}
	}
	go func() {
		p, _, err := c.startCall(ctx, method, params)
		if err == nil {
			err = p.await(ctx, nil)
			var re *RPCError
			if errors.As(err, &re) {
				err = nil
			}
		}
		ch <- barrierResult{seq: p.seqOf(), err: err}
	}()
	return ch
}

// sentSeq is pubSeq when the current version of uri was handed to the writer.
func (c *Client) sentSeq(uri string) uint64 {
	c.docMu.Lock()
	defer c.docMu.Unlock()
	if d := c.docs[uri]; d != nil {
		return d.sentSeq
	}
	return 0
}

// acceptOrdered takes the held set d of uri as current for the files of fileGen (and, when it
// was published without a version, as Ordered), unless a newer set replaced it meanwhile, and
// remembers it.
func (c *Client) acceptOrdered(uri string, d DiagnosticSet, fileGen uint64) DiagnosticSet {
	if !d.Versioned && !d.Reused {
		d.Ordered = true
	}
	d.fileGen = fileGen
	c.diagMu.Lock()
	if cur, ok := c.diags[uri]; ok && cur.seq == d.seq && cur.at.Equal(d.at) {
		c.diags[uri] = d
	}
	c.diagMu.Unlock()
	c.remember(uri, d)
	return d.clone()
}

// answer is a set of diagnostics given for one text of a document.
type answer struct {
	sum     [sha256.Size]byte // of the text
	set     DiagnosticSet
	gen     uint64 // Client.gen when it was given
	changes uint64 // the document's own changes then
}

// maxAnswers is how many texts of a document the client remembers the diagnostics of.
const maxAnswers = 4

// remember keeps set as the answer for uri's current text, when set answers exactly the
// current version.
func (c *Client) remember(uri string, set DiagnosticSet) {
	c.docMu.Lock()
	defer c.docMu.Unlock()
	d := c.docs[uri]
	if d == nil || d.Version != set.Version || set.Reused || set.fileGen != c.fileGenNow() {
		return
	}
	sum := sha256.Sum256(d.buf)
	c.diagMu.Lock()
	defer c.diagMu.Unlock()
	list := slices.DeleteFunc(c.answers[uri], func(a answer) bool { return a.sum == sum })
	if len(list) == maxAnswers {
		list = list[1:]
	}
	c.answers[uri] = append(list, answer{sum: sum, set: set.clone(), gen: c.gen, changes: d.changes})
}

func (c *Client) fileGenNow() uint64 {
	c.diagMu.Lock()
	defer c.diagMu.Unlock()
	return c.fileGen
}

// reuse answers the current version of uri from the answer for an identical text, when
// nothing but this document changed since (it changed away and back).
func (c *Client) reuse(uri string, version int) (DiagnosticSet, bool) {
	c.docMu.Lock()
	defer c.docMu.Unlock()
	d := c.docs[uri]
	if d == nil || d.Version != version {
		return DiagnosticSet{}, false
	}
	c.diagMu.Lock()
	list := c.answers[uri]
	held, have := c.diags[uri]
	gen := c.gen
	c.diagMu.Unlock()
	if len(list) == 0 || (have && held.Version >= version && (held.Versioned || held.Ordered) && held.fileGen == c.fileGen) {
		return DiagnosticSet{}, false // nothing to reuse, or the server answered already
	}
	sum := sha256.Sum256(d.buf)
	for _, a := range list {
		if a.sum == sum && gen-a.gen == d.changes-a.changes {
			set := a.set.clone()
			set.Version, set.Reused, set.at = version, true, time.Now()
			c.keep(set, false)
			return set, true
		}
	}
	return DiagnosticSet{}, false
}

// trackProgress follows work-done progress ($/progress begin and end), for the ordering of
// unversioned sets and for WaitReady.
func (c *Client) trackProgress(params json.RawMessage) {
	var p struct {
		Token json.RawMessage `json:"token"`
		Value struct {
			Kind string `json:"kind"`
		} `json:"value"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	c.diagMu.Lock()
	defer c.diagMu.Unlock()
	switch p.Value.Kind {
	case "begin":
		c.progress[string(p.Token)] = true
		c.progressSeen = true
	case "end":
		delete(c.progress, string(p.Token))
	default:
		return
	}
	close(c.diagsChanged)
	c.diagsChanged = make(chan struct{})
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
		return invalidArg("wait for quiet", "", fmt.Sprintf("quiet must be positive, not %v", quiet))
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
			return ctxError("wait for quiet", "", ctx.Err())
		case <-c.done:
			return c.final
		}
	}
}
