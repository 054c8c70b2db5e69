//go:build unix

package lsp_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/lsp"
	"github.com/subkit/subkit/subprocess"
)

// serverText asks the fake server for its copy of a document.
func serverText(t *testing.T, c *lsp.Client, uri string) (text string, version int, open bool) {
	t.Helper()
	var r struct {
		Open    bool   `json:"open"`
		Text    string `json:"text"`
		Version int    `json:"version"`
	}
	require.NoError(t, c.Call(ctxT(t, 10*time.Second), "test/text", map[string]string{"uri": uri}, &r))
	return r.Text, r.Version, r.Open
}

// rangeOf is the range of the first occurrence of sub in text, in enc.
func rangeOf(t *testing.T, text, sub string, enc lsp.PositionEncoding) *lsp.Range {
	t.Helper()
	i := indexOf(t, text, sub)
	start, err := lsp.OffsetToPosition([]byte(text), i, enc)
	require.NoError(t, err)
	end, err := lsp.OffsetToPosition([]byte(text), i+len(sub), enc)
	require.NoError(t, err)
	return &lsp.Range{Start: start, End: end}
}

func indexOf(t *testing.T, text, sub string) int {
	t.Helper()
	for i := 0; i+len(sub) <= len(text); i++ {
		if text[i:i+len(sub)] == sub {
			return i
		}
	}
	t.Fatalf("%q not in %q", sub, text)
	return -1
}

// Edits with ranges reach the server as it asked: as they are (incremental), or as the whole
// resulting text (full), in UTF-16 or UTF-8 as negotiated; both sides hold the same text.
func TestChangeFollowsTextDocumentSync(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		encs []lsp.PositionEncoding
		sync lsp.SyncKind
		enc  lsp.PositionEncoding
	}{
		{"full", []string{"-sync=1"}, nil, lsp.SyncFull, lsp.UTF16},
		{"incremental utf-16", []string{"-sync=2", "-encoding=utf-8"}, nil, lsp.SyncIncremental, lsp.UTF16},
		{"incremental utf-8", []string{"-sync=2", "-encoding=utf-8"}, []lsp.PositionEncoding{lsp.UTF8, lsp.UTF16}, lsp.SyncIncremental, lsp.UTF8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			c := e.start(t, lsp.Config{PositionEncodings: tc.encs}, tc.args...)
			assert.Equal(t, tc.sync, c.SyncKind())
			assert.Equal(t, tc.enc, c.PositionEncoding())
			uri := lsp.FileURI(filepath.Join(c.Root(), "a.txt"))
			text := "ü😀 an ERROR\r\nsecond 😀 line\n"
			v, err := c.Open(ctxT(t, 10*time.Second), uri, "plaintext", text)
			require.NoError(t, err)
			assert.Equal(t, 1, v)
			set, err := c.Diagnostics(ctxT(t, 10*time.Second), uri, 1)
			require.NoError(t, err)
			require.Len(t, set.Diagnostics, 1)
			want, err := lsp.OffsetToPosition([]byte(text), indexOf(t, text, "ERROR"), tc.enc)
			require.NoError(t, err)
			assert.Equal(t, want, set.Diagnostics[0].Range.Start, "columns in %s", tc.enc)

			// Two edits in one change, the second on the text the first made.
			r1 := rangeOf(t, text, "ERROR", tc.enc)
			after1 := "ü😀 an okay\r\nsecond 😀 line\n"
			r2 := rangeOf(t, after1, "😀 line", tc.enc)
			v, err = c.Change(ctxT(t, 10*time.Second), uri, lsp.TextChange{Range: r1, Text: "okay"}, lsp.TextChange{Range: r2, Text: "€ line"})
			require.NoError(t, err)
			assert.Equal(t, 2, v)
			final := "ü😀 an okay\r\nsecond € line\n"
			doc, ok := c.Document(uri)
			require.True(t, ok)
			assert.Equal(t, lsp.Document{URI: uri, LanguageID: "plaintext", Version: 2, Text: final}, doc)
			got, version, open := serverText(t, c, uri)
			assert.True(t, open)
			assert.Equal(t, final, got, "the server holds the same text")
			assert.Equal(t, 2, version)
			set, err = c.Diagnostics(ctxT(t, 10*time.Second), uri, 2)
			require.NoError(t, err)
			assert.Equal(t, 2, set.Version)
			assert.Empty(t, set.Diagnostics)

			// A whole-text change.
			v, err = c.Change(ctxT(t, 10*time.Second), uri, lsp.TextChange{Text: "ERROR again"})
			require.NoError(t, err)
			assert.Equal(t, 3, v)
			got, _, _ = serverText(t, c, uri)
			assert.Equal(t, "ERROR again", got)
			set, err = c.Diagnostics(ctxT(t, 10*time.Second), uri, 3)
			require.NoError(t, err)
			assert.Len(t, set.Diagnostics, 1)

			// A range outside the document changes nothing and sends nothing.
			_, err = c.Change(ctxT(t, 10*time.Second), uri, lsp.TextChange{Range: &lsp.Range{End: lsp.Position{Line: 9}}, Text: "x"})
			assert.ErrorIs(t, err, lsp.ErrPosition)
			_, err = c.Change(ctxT(t, 10*time.Second), uri, lsp.TextChange{Range: &lsp.Range{Start: lsp.Position{Character: 3}, End: lsp.Position{Character: 1}}, Text: "x"})
			assert.ErrorIs(t, err, lsp.ErrPosition)
			doc, _ = c.Document(uri)
			assert.Equal(t, 3, doc.Version)
			got, version, _ = serverText(t, c, uri)
			assert.Equal(t, "ERROR again", got)
			assert.Equal(t, 3, version)
		})
	}
}

// After a change, a late publish for the version before (sent after the change, in the same
// write as the fresh one) is never the answer.
func TestDiagnosticsNeverStale(t *testing.T) {
	e := newEnv(t)
	c := e.start(t, lsp.Config{}, "-stale")
	uri := lsp.FileURI(filepath.Join(c.Root(), "a.txt"))
	_, err := c.Open(ctxT(t, 10*time.Second), uri, "plaintext", "an ERROR")
	require.NoError(t, err)
	set, err := c.Diagnostics(ctxT(t, 10*time.Second), uri, 1)
	require.NoError(t, err)
	require.Len(t, set.Diagnostics, 1)
	for v := 2; v <= 20; v++ { // many rounds: the stale set arrives first every time
		text := "fixed"
		if v%2 == 1 {
			text = "ERROR again"
		}
		got, err := c.Change(ctxT(t, 10*time.Second), uri, lsp.TextChange{Text: text})
		require.NoError(t, err)
		require.Equal(t, v, got)
		set, err := c.Diagnostics(ctxT(t, 10*time.Second), uri, v)
		require.NoError(t, err)
		assert.Equal(t, v, set.Version)
		assert.True(t, set.Versioned)
		assert.Len(t, set.Diagnostics, v%2, "version %d", v)
	}
	last, err := c.Diagnostics(ctxT(t, time.Second), uri, 20, lsp.NoWait)
	require.NoError(t, err)
	assert.Equal(t, 20, last.Version, "a stale publish never replaces a newer set")
	require.NoError(t, c.Close())
}

// A server that names no version: the set that arrived after the change and settled answers.
func TestDiagnosticsUnversioned(t *testing.T) {
	e := newEnv(t)
	c := e.start(t, lsp.Config{UnversionedSettle: 200 * time.Millisecond}, "-stale", "-unversioned")
	uri := lsp.FileURI(filepath.Join(c.Root(), "a.txt"))
	_, err := c.Open(ctxT(t, 10*time.Second), uri, "plaintext", "an ERROR")
	require.NoError(t, err)
	set, err := c.Diagnostics(ctxT(t, 10*time.Second), uri, 1)
	require.NoError(t, err)
	assert.Len(t, set.Diagnostics, 1)
	assert.False(t, set.Versioned)
	assert.Equal(t, 1, set.Version, "taken as the version current when it arrived")
	_, err = c.Change(ctxT(t, 10*time.Second), uri, lsp.TextChange{Text: "fixed"})
	require.NoError(t, err)
	set, err = c.Diagnostics(ctxT(t, 10*time.Second), uri, 2)
	require.NoError(t, err)
	assert.Equal(t, 2, set.Version)
	assert.Empty(t, set.Diagnostics, "the settled set, not the late one before it")
}

// Pull diagnostics, offered statically or registered dynamically: the first pull is cancelled
// by the server with retriggerRequest and asked again; an unchanged answer reuses the set.
func TestPullDiagnostics(t *testing.T) {
	for _, mode := range []string{"static", "dynamic"} {
		t.Run(mode, func(t *testing.T) {
			e := newEnv(t)
			c := e.start(t, lsp.Config{}, "-pull="+mode)
			uri := lsp.FileURI(filepath.Join(c.Root(), "a.txt"))
			_, err := c.Open(ctxT(t, 10*time.Second), uri, "plaintext", "an ERROR and ERROR")
			require.NoError(t, err)
			set, err := c.Diagnostics(ctxT(t, 10*time.Second), uri, 1)
			require.NoError(t, err)
			assert.True(t, c.PullDiagnostics())
			assert.True(t, set.Pulled)
			assert.True(t, set.Versioned)
			assert.Equal(t, 1, set.Version)
			require.Len(t, set.Diagnostics, 2)
			again, err := c.Diagnostics(ctxT(t, 10*time.Second), uri, 1) // "unchanged"
			require.NoError(t, err)
			assert.Equal(t, set.Diagnostics, again.Diagnostics)
			_, err = c.Change(ctxT(t, 10*time.Second), uri, lsp.TextChange{Text: "fine"})
			require.NoError(t, err)
			set, err = c.Diagnostics(ctxT(t, 10*time.Second), uri, 2)
			require.NoError(t, err)
			assert.Equal(t, 2, set.Version)
			assert.Empty(t, set.Diagnostics)
			last, err := c.Diagnostics(ctxT(t, time.Second), uri, 2, lsp.NoWait)
			require.NoError(t, err)
			assert.Equal(t, 2, last.Version)
		})
	}
}

func TestSaveCloseReopen(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		withText bool
	}{{[]string{"-sync=1"}, false}, {[]string{"-sync=2"}, true}} {
		t.Run(tc.args[0], func(t *testing.T) {
			e := newEnv(t)
			saved := make(chan json.RawMessage, 1)
			c := e.start(t, lsp.Config{OnNotification: func(method string, params json.RawMessage) {
				if method == "test/saved" {
					saved <- params
				}
			}}, tc.args...)
			uri := lsp.FileURI(filepath.Join(c.Root(), "a.txt"))
			_, err := c.Open(ctxT(t, 10*time.Second), uri, "plaintext", "one")
			require.NoError(t, err)
			_, err = c.Open(ctxT(t, 10*time.Second), uri, "plaintext", "again")
			assert.ErrorIs(t, err, lsp.ErrAlreadyOpen)
			require.NoError(t, c.Save(ctxT(t, 10*time.Second), uri))
			select {
			case p := <-saved:
				var v struct {
					TextDocument struct{ URI string } `json:"textDocument"`
					Text         *string              `json:"text"`
				}
				require.NoError(t, json.Unmarshal(p, &v))
				assert.Equal(t, uri, v.TextDocument.URI)
				if tc.withText {
					require.NotNil(t, v.Text, "includeText asked for")
					assert.Equal(t, "one", *v.Text)
				} else {
					assert.Nil(t, v.Text)
				}
			case <-c.Done():
				t.Fatal("server ended")
			case <-ctxT(t, 10*time.Second).Done():
				t.Fatal("no didSave reached the server")
			}
			_, err = c.Change(ctxT(t, 10*time.Second), uri, lsp.TextChange{Text: "two"})
			require.NoError(t, err)
			require.NoError(t, c.CloseDocument(ctxT(t, 10*time.Second), uri))
			_, _, open := serverText(t, c, uri)
			assert.False(t, open)
			_, ok := c.Document(uri)
			assert.False(t, ok)
			assert.Empty(t, c.Documents())
			_, err = c.Change(ctxT(t, 10*time.Second), uri, lsp.TextChange{Text: "x"})
			assert.ErrorIs(t, err, lsp.ErrNotOpen)
			assert.ErrorIs(t, c.Save(ctxT(t, 10*time.Second), uri), lsp.ErrNotOpen)
			assert.ErrorIs(t, c.CloseDocument(ctxT(t, 10*time.Second), uri), lsp.ErrNotOpen)
			v, err := c.Open(ctxT(t, 10*time.Second), uri, "plaintext", "three")
			require.NoError(t, err)
			assert.Equal(t, 3, v, "versions go on after a close: never the same version twice")
			_, version, _ := serverText(t, c, uri)
			assert.Equal(t, 3, version)
			other := lsp.FileURI(filepath.Join(c.Root(), "b.go"))
			v, err = c.Open(ctxT(t, 10*time.Second), other, "", "package b")
			require.NoError(t, err)
			assert.Equal(t, 1, v)
			assert.Len(t, c.Documents(), 2)
			d, _ := c.Document(other)
			assert.Equal(t, lsp.LanguageID("b.go"), d.LanguageID, "the language id of the URI's path")
		})
	}
}

func TestDocumentErrors(t *testing.T) {
	e := newEnv(t)
	c := e.start(t, lsp.Config{})
	uri := lsp.FileURI(filepath.Join(c.Root(), "a.txt"))
	var nilCtx context.Context
	_, err := c.Open(nilCtx, uri, "plaintext", "x")
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	_, err = c.Open(ctxT(t, time.Second), "", "plaintext", "x")
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	_, err = c.Change(ctxT(t, time.Second), uri)
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	_, err = c.Change(ctxT(t, time.Second), uri, lsp.TextChange{Text: "x"})
	assert.ErrorIs(t, err, lsp.ErrNotOpen)
	_, err = c.Diagnostics(ctxT(t, time.Second), uri, 1)
	assert.ErrorIs(t, err, lsp.ErrNotOpen, "a version never sent cannot arrive")
	_, err = c.Diagnostics(ctxT(t, time.Second), uri, -1)
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	_, err = c.Diagnostics(nilCtx, uri, 0)
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	assert.ErrorIs(t, c.WaitQuiet(ctxT(t, time.Second), 0), subprocess.ErrInvalid)
	assert.ErrorIs(t, c.Call(nilCtx, "test/echo", nil, nil), subprocess.ErrInvalid)
	assert.ErrorIs(t, c.Notify(nilCtx, "test/echo", nil), subprocess.ErrInvalid)
	_, err = c.Shutdown(nilCtx)
	assert.ErrorIs(t, err, subprocess.ErrInvalid)
	_, err = e.try(t, lsp.Config{PositionEncodings: []lsp.PositionEncoding{"utf-7"}})
	assert.ErrorIs(t, err, subprocess.ErrInvalid)

	// A zero Client and a nil one: errors, never a panic.
	for _, z := range []*lsp.Client{{}, nil} {
		assert.ErrorIs(t, z.Call(context.Background(), "x", nil, nil), subprocess.ErrInvalid)
		_, err := z.Open(context.Background(), uri, "plaintext", "x")
		assert.ErrorIs(t, err, subprocess.ErrInvalid)
		_, err = z.Diagnostics(context.Background(), uri, 0)
		assert.ErrorIs(t, err, subprocess.ErrInvalid)
		assert.ErrorIs(t, z.WaitQuiet(context.Background(), time.Second), subprocess.ErrInvalid)
		_, err = z.Shutdown(context.Background())
		assert.ErrorIs(t, err, subprocess.ErrInvalid)
		assert.ErrorIs(t, z.Close(), subprocess.ErrInvalid)
		_, ok := z.Document(uri)
		assert.False(t, ok)
		assert.Nil(t, z.Documents())
		_, err = z.Diagnostics(context.Background(), uri, 0, lsp.NoWait)
		assert.ErrorIs(t, err, subprocess.ErrInvalid)
		assert.ErrorIs(t, z.Err(), subprocess.ErrInvalid)
		<-z.Done()
		assert.Zero(t, z.Pid())
		assert.Nil(t, z.StderrTail())
		assert.Equal(t, lsp.UTF16, z.PositionEncoding())
		assert.False(t, z.PullDiagnostics())
		assert.Empty(t, z.Root())
	}
}

func TestWaitQuiet(t *testing.T) {
	e := newEnv(t)
	c := e.start(t, lsp.Config{})
	uri := lsp.FileURI(filepath.Join(c.Root(), "a.txt"))
	_, err := c.Open(ctxT(t, 10*time.Second), uri, "plaintext", "ERROR")
	require.NoError(t, err)
	_, err = c.Diagnostics(ctxT(t, 10*time.Second), uri, 1)
	require.NoError(t, err)
	require.NoError(t, c.WaitQuiet(ctxT(t, 10*time.Second), 100*time.Millisecond), "nothing more is published")

	// A server that keeps publishing (every 5ms) is never quiet for a second.
	require.NoError(t, c.Call(ctxT(t, 10*time.Second), "test/chatter", map[string]string{"uri": uri + "x"}, nil))
	err = c.WaitQuiet(ctxT(t, 3*time.Second), time.Second)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, c.Call(ctxT(t, 10*time.Second), "test/stopchatter", nil, nil))
	require.NoError(t, c.WaitQuiet(ctxT(t, 10*time.Second), 100*time.Millisecond))

	// When the server is gone nothing more can come: the connection's error.
	err = c.Call(ctxT(t, 10*time.Second), "test/crash", map[string]any{"code": 5, "stderr": "gone\n"}, nil)
	require.ErrorIs(t, err, lsp.ErrServerExited)
	assert.ErrorIs(t, c.WaitQuiet(ctxT(t, 10*time.Second), time.Hour), lsp.ErrServerExited)
	_, err = c.Diagnostics(ctxT(t, 10*time.Second), uri, 1)
	assert.NoError(t, err, "the set of version 1 is still held")
}

func TestApplyEdit(t *testing.T) {
	ask := func(t *testing.T, c *lsp.Client) (result json.RawMessage, rpcErr *lsp.RPCError) {
		t.Helper()
		var r struct {
			Result json.RawMessage `json:"result"`
			Error  *lsp.RPCError   `json:"error"`
		}
		require.NoError(t, c.Call(ctxT(t, 10*time.Second), "test/request", map[string]any{
			"method": "workspace/applyEdit", "params": map[string]any{"label": "rename", "edit": map[string]any{"changes": map[string]any{}}},
		}, &r))
		return r.Result, r.Error
	}
	t.Run("default", func(t *testing.T) {
		e := newEnv(t)
		c := e.start(t, lsp.Config{})
		res, rerr := ask(t, c)
		require.Nil(t, rerr)
		var r lsp.ApplyEditResult
		require.NoError(t, json.Unmarshal(res, &r))
		assert.False(t, r.Applied)
		assert.Contains(t, r.FailureReason, "applies no edits")
		var params struct {
			Capabilities struct {
				Workspace struct{ ApplyEdit bool } `json:"workspace"`
			} `json:"capabilities"`
		}
		require.NoError(t, json.Unmarshal(experimental(t, c)["initParams"], &params))
		assert.False(t, params.Capabilities.Workspace.ApplyEdit)
	})
	t.Run("handler", func(t *testing.T) {
		e := newEnv(t)
		c := e.start(t, lsp.Config{Handlers: map[string]lsp.RequestHandler{
			"workspace/applyEdit": func(_ context.Context, p json.RawMessage) (any, error) {
				return lsp.ApplyEditResult{Applied: true}, nil
			},
		}})
		res, rerr := ask(t, c)
		require.Nil(t, rerr)
		assert.JSONEq(t, `{"applied":true}`, string(res))
		var params struct {
			Capabilities struct {
				Workspace struct{ ApplyEdit bool } `json:"workspace"`
			} `json:"capabilities"`
		}
		require.NoError(t, json.Unmarshal(experimental(t, c)["initParams"], &params))
		assert.True(t, params.Capabilities.Workspace.ApplyEdit, "advertised once a handler applies edits")
	})
}

// The offered encodings reach the server in both forms (general.positionEncodings, clangd's
// offsetEncoding).
func TestPositionEncodingsOffered(t *testing.T) {
	e := newEnv(t)
	c := e.start(t, lsp.Config{PositionEncodings: []lsp.PositionEncoding{lsp.UTF8, lsp.UTF16}}, "-encoding=utf-8")
	assert.Equal(t, lsp.UTF8, c.PositionEncoding())
	var params struct {
		Capabilities struct {
			General struct {
				PositionEncodings []string `json:"positionEncodings"`
			} `json:"general"`
			OffsetEncoding []string `json:"offsetEncoding"`
		} `json:"capabilities"`
	}
	require.NoError(t, json.Unmarshal(experimental(t, c)["initParams"], &params))
	assert.Equal(t, []string{"utf-8", "utf-16"}, params.Capabilities.General.PositionEncodings)
	assert.Equal(t, []string{"utf-8", "utf-16"}, params.Capabilities.OffsetEncoding)
	// Offered nothing but the default, the same server stays on UTF-16.
	d := e.start(t, lsp.Config{}, "-encoding=utf-8")
	assert.Equal(t, lsp.UTF16, d.PositionEncoding())
}
