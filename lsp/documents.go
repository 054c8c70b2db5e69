package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
)

var (
	// ErrNotOpen: a document operation named a URI the client has not opened (Open), or a
	// version of it that was never sent.
	ErrNotOpen = errors.New("document is not open")
	// ErrAlreadyOpen: Open named a URI that is open already; Change it, or CloseDocument first.
	ErrAlreadyOpen = errors.New("document is already open")
)

// SyncKind is how the server wants document changes: none, the full text, or incremental
// edits (textDocumentSync.change).
type SyncKind int

const (
	SyncNone        SyncKind = 0
	SyncFull        SyncKind = 1
	SyncIncremental SyncKind = 2
)

func (k SyncKind) String() string {
	switch k {
	case SyncNone:
		return "none"
	case SyncFull:
		return "full"
	case SyncIncremental:
		return "incremental"
	}
	return fmt.Sprintf("sync kind %d", int(k))
}

// syncOptions is the server's textDocumentSync, resolved as editors do: the number form means
// open/close notifications, that change kind, and didSave without the text.
type syncOptions struct {
	openClose   bool
	change      SyncKind
	save        bool
	includeText bool
}

func parseSync(caps json.RawMessage) syncOptions {
	var c struct {
		Sync json.RawMessage `json:"textDocumentSync"`
	}
	if json.Unmarshal(caps, &c) != nil || len(c.Sync) == 0 || string(c.Sync) == "null" {
		return syncOptions{} // no sync at all: the server does not want documents
	}
	var kind int
	if json.Unmarshal(c.Sync, &kind) == nil {
		return syncOptions{openClose: true, change: SyncKind(kind), save: true}
	}
	var o struct {
		OpenClose bool            `json:"openClose"`
		Change    int             `json:"change"`
		Save      json.RawMessage `json:"save"`
	}
	if json.Unmarshal(c.Sync, &o) != nil {
		return syncOptions{}
	}
	so := syncOptions{openClose: o.OpenClose, change: SyncKind(o.Change)}
	var b bool
	var so2 struct {
		IncludeText bool `json:"includeText"`
	}
	switch {
	case len(o.Save) == 0 || string(o.Save) == "null":
	case json.Unmarshal(o.Save, &b) == nil:
		so.save = b
	case json.Unmarshal(o.Save, &so2) == nil:
		so.save, so.includeText = true, so2.IncludeText
	}
	return so
}

// negotiatedEncoding reads the encoding the server chose from its initialize result:
// capabilities.positionEncoding, else clangd's offsetEncoding, else UTF-16.
func negotiatedEncoding(result json.RawMessage) PositionEncoding {
	var r struct {
		Capabilities struct {
			PositionEncoding PositionEncoding `json:"positionEncoding"`
		} `json:"capabilities"`
		OffsetEncoding PositionEncoding `json:"offsetEncoding"`
	}
	json.Unmarshal(result, &r)
	for _, e := range []PositionEncoding{r.Capabilities.PositionEncoding, r.OffsetEncoding} {
		if e != "" && e.check() == nil {
			return e
		}
	}
	return UTF16
}

// SyncKind is how the server asked for document changes (textDocumentSync).
func (c *Client) SyncKind() SyncKind {
	if c == nil {
		return SyncNone
	}
	return c.sync.change
}

// PositionEncoding is the encoding the server negotiated for Position.Character: UTF-16
// unless Config.PositionEncodings offered another and the server chose it.
func (c *Client) PositionEncoding() PositionEncoding {
	if c == nil {
		return UTF16
	}
	return c.enc.orDefault()
}

// TextChange is one change of a document: Text replaces Range, or the whole text when Range is
// nil. Range counts characters in the negotiated PositionEncoding.
type TextChange struct {
	Range *Range `json:"range,omitempty"`
	Text  string `json:"text"`
}

// Document is what the client holds of an open document: its last version and text.
type Document struct {
	URI        string
	LanguageID string
	Version    int
	Text       string
}

// openDoc is an open document and what the client tracks of it. Its text is a buffer that
// edits change in place (Document.Text stays empty): an edit of a large document copies
// nothing but the bytes after it, and a string of the text is made only when one is asked for.
type openDoc struct {
	Document
	buf     []byte
	str     string // the text as a string, once asked for; valid while strOK
	strOK   bool
	sentSeq uint64 // Client.pubSeq when this version was handed to the writer
	changes uint64 // how many times this document changed, counted in Client.gen
}

// text returns the document's text as a string, made once per version. Call it under docMu.
func (d *openDoc) text() string {
	if !d.strOK {
		d.str, d.strOK = string(d.buf), true
	}
	return d.str
}

// snapshot is the Document a caller gets. Call it under docMu.
func (d *openDoc) snapshot() Document {
	doc := d.Document
	doc.Text = d.text()
	return doc
}

// setText replaces the text (and drops the string made of the old one).
func (d *openDoc) setText(b []byte) {
	d.buf, d.str, d.strOK = b, "", false
}

// sent records, under docMu, that d's current version was handed to the writer: publishes
// from now on arrive after the server could read it. It counts a change in gen.
func (c *Client) sent(d *openDoc) {
	c.diagMu.Lock()
	d.sentSeq = c.pubSeq
	c.gen++
	c.diagMu.Unlock()
	d.changes++
}

// lockDocs takes the document semaphore: document notifications (and pull requests, which
// must say which version they answer) are handed to the writer one at a time, in version order.
func (c *Client) lockDocs(ctx context.Context) error {
	select {
	case c.docSem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctxError("wait to send a document change", "", ctx.Err())
	}
}

func (c *Client) unlockDocs() { <-c.docSem }

// Open opens a document (textDocument/didOpen) with the next version of its URI (1 the first
// time; a document closed and opened again goes on from its last version, so versions never
// repeat) and returns that version. An empty languageID is the one LanguageID gives the URI's
// path. The client keeps the text, to apply later changes to it and to know which version a
// diagnostic answers. A server that asked for no open/close notifications is sent none; the
// document is kept all the same. To open a file, read it with ReadDocument (which refuses
// what is not a regular file, and caps the size) and pass FileURI of its path.
func (c *Client) Open(ctx context.Context, uri, languageID, text string) (int, error) {
	if err := c.usable(ctx, "open"); err != nil {
		return 0, err
	}
	if languageID == "" {
		if path, err := URIToPath(uri); err == nil {
			languageID = LanguageID(path)
		}
	}
	return c.open(ctx, TextDocumentItem{URI: uri, LanguageID: languageID, Text: text})
}

// open sends textDocument/didOpen for doc (Version 0 means the next version of its URI) and
// keeps the document. A Pool re-opens documents on a restarted server with their versions.
func (c *Client) open(ctx context.Context, doc TextDocumentItem) (int, error) {
	if doc.URI == "" {
		return 0, invalidArg("open", "", "empty URI")
	}
	if doc.Version < 0 {
		return 0, invalidArg("open", doc.URI, fmt.Sprintf("negative version %d", doc.Version))
	}
	if err := c.lockDocs(ctx); err != nil {
		return 0, err
	}
	defer c.unlockDocs()
	c.docMu.Lock()
	if _, open := c.docs[doc.URI]; open {
		c.docMu.Unlock()
		return 0, newError("open", doc.URI, ErrAlreadyOpen, nil)
	}
	if doc.Version == 0 {
		doc.Version = c.versions[doc.URI] + 1
	}
	c.docMu.Unlock()
	if c.sync.openClose {
		handedOver, err := c.notify(ctx, "textDocument/didOpen", map[string]any{"textDocument": doc}, func() { c.commitOpen(doc) })
		if !handedOver {
			return 0, err
		}
		return doc.Version, err
	}
	c.commitOpen(doc)
	return doc.Version, nil
}

func (c *Client) commitOpen(doc TextDocumentItem) {
	c.docMu.Lock()
	d := &openDoc{Document: Document{URI: doc.URI, LanguageID: doc.LanguageID, Version: doc.Version},
		buf: []byte(doc.Text), str: doc.Text, strOK: true}
	c.sent(d)
	c.docs[doc.URI] = d
	c.versions[doc.URI] = max(c.versions[doc.URI], doc.Version)
	c.docMu.Unlock()
}

// Change applies changes, in order, to the open document uri and sends them
// (textDocument/didChange) as the server asked: as they are to a server that takes
// incremental changes; as the resulting full text to one that takes the full text; not at all
// to one that takes none. It returns the new version.
//
// A range outside the document fails with ErrPosition and changes nothing. When ctx ends after
// the notification reached the writer, it still goes out whole: the change is kept (the
// version counted) and the error is ctx's. The client's copy changes as the notification is
// handed to the writer, before the server can answer it: a publish that follows it is taken
// for the new version.
func (c *Client) Change(ctx context.Context, uri string, changes ...TextChange) (int, error) {
	if err := c.usable(ctx, "change"); err != nil {
		return 0, err
	}
	if len(changes) == 0 {
		return 0, invalidArg("change", uri, "no changes given")
	}
	if err := c.lockDocs(ctx); err != nil {
		return 0, err
	}
	defer c.unlockDocs()
	c.docMu.Lock()
	d, open := c.docs[uri]
	var cur []byte
	var version int
	if open {
		// The buffer changes only under docSem, which this call holds: it may be read
		// without docMu until the commit.
		cur, version = d.buf, c.versions[uri]+1
	}
	c.docMu.Unlock()
	if !open {
		return 0, newError("change", uri, ErrNotOpen, nil)
	}
	enc := c.PositionEncoding()
	span := func(text []byte, i int, ch TextChange) (int, int, error) {
		start, err := PositionToOffset(text, ch.Range.Start, enc)
		if err != nil {
			return 0, 0, newError("change", uri, nil, fmt.Errorf("change %d: %w", i, err))
		}
		end, err := PositionToOffset(text, ch.Range.End, enc)
		if err == nil && end < start {
			err = fmt.Errorf("%w: range ends before it starts", ErrPosition)
		}
		if err != nil {
			return 0, 0, newError("change", uri, nil, fmt.Errorf("change %d: %w", i, err))
		}
		return start, end, nil
	}
	// apply makes the new text at the commit. One ranged edit (what editors and agents send)
	// is made in place in the buffer; several are made on one copy, in order.
	var apply func(buf []byte) []byte
	if len(changes) == 1 && changes[0].Range != nil {
		start, end, err := span(cur, 0, changes[0])
		if err != nil {
			return 0, err
		}
		newText := changes[0].Text
		apply = func(buf []byte) []byte { return replaceBytes(buf, start, end, newText) }
	} else {
		text := slices.Clone(cur)
		for i, ch := range changes {
			if ch.Range == nil {
				text = []byte(ch.Text)
				continue
			}
			start, end, err := span(text, i, ch)
			if err != nil {
				return 0, err
			}
			text = replaceBytes(text, start, end, ch.Text)
		}
		apply = func([]byte) []byte { return text }
	}
	var full []byte // the resulting text, for a server that takes whole texts
	if c.sync.change == SyncFull {
		full = apply(slices.Clone(cur)) // the document's buffer changes only at the commit
		apply = func([]byte) []byte { return full }
	}
	commit := func() {
		c.docMu.Lock()
		if d := c.docs[uri]; d != nil {
			d.setText(apply(d.buf))
			d.Version = version
			c.sent(d)
		}
		c.versions[uri] = version
		c.docMu.Unlock()
	}
	var sent []TextChange
	switch c.sync.change {
	case SyncNone:
		commit()
		return version, nil
	case SyncFull:
		sent = []TextChange{{Text: string(full)}}
	default:
		sent = changes
	}
	handedOver, err := c.notify(ctx, "textDocument/didChange", map[string]any{
		"textDocument":   map[string]any{"uri": uri, "version": version},
		"contentChanges": sent,
	}, commit)
	if handedOver {
		return version, err
	}
	return 0, err
}

// Save sends textDocument/didSave for the open document uri (with its text when the server
// asked for it), when the server asked for save notifications at all.
func (c *Client) Save(ctx context.Context, uri string) error {
	if err := c.usable(ctx, "save"); err != nil {
		return err
	}
	if err := c.lockDocs(ctx); err != nil {
		return err
	}
	defer c.unlockDocs()
	c.docMu.Lock()
	d, open := c.docs[uri]
	var text string
	if open && c.sync.includeText {
		text = d.text()
	}
	c.docMu.Unlock()
	if !open {
		return newError("save", uri, ErrNotOpen, nil)
	}
	if !c.sync.save {
		return nil
	}
	params := map[string]any{"textDocument": map[string]string{"uri": uri}}
	if c.sync.includeText {
		params["text"] = text
	}
	_, err := c.notify(ctx, "textDocument/didSave", params, nil)
	return err
}

// CloseDocument closes the open document uri (textDocument/didClose) and forgets its text; its
// version count goes on if it is opened again. (Close, without a URI, shuts the client down.)
func (c *Client) CloseDocument(ctx context.Context, uri string) error {
	if err := c.usable(ctx, "close"); err != nil {
		return err
	}
	if err := c.lockDocs(ctx); err != nil {
		return err
	}
	defer c.unlockDocs()
	c.docMu.Lock()
	_, open := c.docs[uri]
	c.docMu.Unlock()
	if !open {
		return newError("close", uri, ErrNotOpen, nil)
	}
	forget := func() {
		c.docMu.Lock()
		delete(c.docs, uri)
		c.docMu.Unlock()
		c.diagMu.Lock()
		c.gen++
		delete(c.answers, uri)
		c.diagMu.Unlock()
	}
	if !c.sync.openClose {
		forget()
		return nil
	}
	_, err := c.notify(ctx, "textDocument/didClose", map[string]any{"textDocument": map[string]string{"uri": uri}}, forget)
	return err
}

// Document returns the client's copy of the open document uri.
func (c *Client) Document(uri string) (Document, bool) {
	if c == nil || c.docs == nil {
		return Document{}, false
	}
	c.docMu.Lock()
	defer c.docMu.Unlock()
	d, ok := c.docs[uri]
	if !ok {
		return Document{}, false
	}
	return d.snapshot(), true
}

// Documents returns the client's copies of every open document, by URI order. They stay
// readable after the server has ended (a Pool re-opens them on the next server).
func (c *Client) Documents() []Document {
	if c == nil || c.docs == nil {
		return nil
	}
	c.docMu.Lock()
	out := make([]Document, 0, len(c.docs))
	for _, d := range c.docs {
		out = append(out, d.snapshot())
	}
	c.docMu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].URI < out[j].URI })
	return out
}

// version returns the current version of uri and whether it is open.
// openURI returns the URI under which the client opened the file uri names, when the text of
// the two differs (a server that escapes or cases it its own way); else uri.
func (c *Client) openURI(uri string) string {
	c.docMu.Lock()
	defer c.docMu.Unlock()
	if _, ok := c.docs[uri]; ok {
		return uri
	}
	for open := range c.docs {
		if sameFile(open, uri) {
			return open
		}
	}
	return uri
}

func (c *Client) version(uri string) (int, bool) {
	c.docMu.Lock()
	defer c.docMu.Unlock()
	d, ok := c.docs[uri]
	if !ok {
		return 0, false
	}
	return d.Version, true
}

// replaceBytes replaces b[start:end] with s in place (the bytes after it move; b grows only
// when its capacity is short) and returns the result.
func replaceBytes(b []byte, start, end int, s string) []byte {
	delta := len(s) - (end - start)
	switch {
	case delta > 0:
		n := len(b)
		b = slices.Grow(b, delta)[:n+delta]
		copy(b[end+delta:], b[end:n])
	case delta < 0:
		copy(b[end+delta:], b[end:])
		b = b[:len(b)+delta]
	}
	copy(b[start:], s)
	return b
}

// registration is a capability the server registered dynamically.
type registration struct {
	Method          string          `json:"method"`
	RegisterOptions json.RawMessage `json:"registerOptions"`
}

// trackRegistrations records client/registerCapability and client/unregisterCapability, before
// any handler answers them (pull diagnostics may be registered this way).
func (c *Client) trackRegistrations(method string, params json.RawMessage) {
	var p struct {
		Registrations []struct {
			ID string `json:"id"`
			registration
		} `json:"registrations"`
		Unregisterations []struct {
			ID string `json:"id"`
		} `json:"unregisterations"` // sic, in the protocol
	}
	if err := json.Unmarshal(params, &p); err != nil {
		c.log.Warn("lsp: unreadable "+method, "err", err)
		return
	}
	c.docMu.Lock()
	defer c.docMu.Unlock()
	for _, r := range p.Registrations {
		c.regs[r.ID] = r.registration
	}
	for _, u := range p.Unregisterations {
		delete(c.regs, u.ID)
	}
	c.diagMu.Lock() // wake Diagnostics: it may pull now
	close(c.diagsChanged)
	c.diagsChanged = make(chan struct{})
	c.diagMu.Unlock()
}
