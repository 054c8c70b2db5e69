package lsp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/subkit/subkit/internal/errtext"
	"github.com/subkit/subkit/subprocess"
)

var (
	// ErrVersionMismatch: a WorkspaceEdit names a version of an open document other than the
	// one the client holds (the server computed it for an older text). Ask the server again.
	ErrVersionMismatch = errors.New("the edit is for another version of the document")
	// ErrOutsideRoot: a WorkspaceEdit names a file outside the workspace root, which
	// ApplyEdit never touches.
	ErrOutsideRoot = errors.New("the edit names a file outside the workspace root")
	// ErrBadEdit: a WorkspaceEdit cannot be applied as given: overlapping text edits, a range
	// outside the text, a file to create that exists, one to rename or delete that does not.
	ErrBadEdit = errors.New("the edit cannot be applied")
)

// TextEdit replaces Range with NewText (an empty range inserts, an empty text deletes).
type TextEdit struct {
	Range   Range  `json:"range"`
	NewText string `json:"newText"`
}

// VersionedDocument names a document and, when Version is set, the version an edit is for.
type VersionedDocument struct {
	URI     string `json:"uri"`
	Version *int   `json:"version"`
}

// FileOptions are the options of a create, rename or delete in a WorkspaceEdit.
type FileOptions struct {
	Overwrite         bool `json:"overwrite,omitempty"`
	IgnoreIfExists    bool `json:"ignoreIfExists,omitempty"`
	Recursive         bool `json:"recursive,omitempty"`
	IgnoreIfNotExists bool `json:"ignoreIfNotExists,omitempty"`
}

// DocumentChange is one entry of WorkspaceEdit.DocumentChanges: text edits of one document
// (Kind ""), or a file operation (Kind "create" or "delete" with URI, "rename" with OldURI and
// NewURI).
type DocumentChange struct {
	Kind         string
	TextDocument VersionedDocument
	Edits        []TextEdit
	URI          string
	OldURI       string
	NewURI       string
	Options      *FileOptions
}

type wireDocumentChange struct {
	Kind         string             `json:"kind,omitempty"`
	TextDocument *VersionedDocument `json:"textDocument,omitempty"`
	Edits        []TextEdit         `json:"edits,omitempty"`
	URI          string             `json:"uri,omitempty"`
	OldURI       string             `json:"oldUri,omitempty"`
	NewURI       string             `json:"newUri,omitempty"`
	Options      *FileOptions       `json:"options,omitempty"`
}

// MarshalJSON writes the protocol's form: a TextDocumentEdit, or a CreateFile, RenameFile or
// DeleteFile.
func (d DocumentChange) MarshalJSON() ([]byte, error) {
	w := wireDocumentChange{Kind: d.Kind, URI: d.URI, OldURI: d.OldURI, NewURI: d.NewURI, Options: d.Options}
	if d.Kind == "" {
		td := d.TextDocument
		w.TextDocument = &td
		w.Edits = d.Edits
		if w.Edits == nil {
			w.Edits = []TextEdit{}
		}
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads the protocol's form.
func (d *DocumentChange) UnmarshalJSON(b []byte) error {
	var w wireDocumentChange
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*d = DocumentChange{Kind: w.Kind, Edits: w.Edits, URI: w.URI, OldURI: w.OldURI, NewURI: w.NewURI, Options: w.Options}
	if w.TextDocument != nil {
		d.TextDocument = *w.TextDocument
	}
	switch d.Kind {
	case "", "create", "rename", "delete":
		return nil
	}
	return newError("decode document change", "", subprocess.ErrInvalid, fmt.Errorf("unknown kind %q", d.Kind))
}

// WorkspaceEdit is a set of changes to the workspace (textDocument/rename's answer, a code
// action's edit, workspace/applyEdit's request): DocumentChanges, in order, when set; else
// Changes, text edits by URI.
type WorkspaceEdit struct {
	Changes         map[string][]TextEdit `json:"changes,omitempty"`
	DocumentChanges []DocumentChange      `json:"documentChanges,omitempty"`
}

// Ops returns the edit as one ordered list: DocumentChanges, or Changes by URI order.
func (e WorkspaceEdit) Ops() []DocumentChange {
	if len(e.DocumentChanges) > 0 {
		return e.DocumentChanges
	}
	uris := make([]string, 0, len(e.Changes))
	for u := range e.Changes {
		uris = append(uris, u)
	}
	slices.Sort(uris)
	out := make([]DocumentChange, 0, len(uris))
	for _, u := range uris {
		out = append(out, DocumentChange{TextDocument: VersionedDocument{URI: u}, Edits: e.Changes[u]})
	}
	return out
}

// EditResult says what ApplyEdit changed: files whose text it rewrote, created, deleted and
// renamed (absolute paths, in the order of the edit), and the open documents it sent again.
type EditResult struct {
	Changed []string    `json:"changed"`
	Created []string    `json:"created,omitempty"`
	Deleted []string    `json:"deleted,omitempty"`
	Renamed [][2]string `json:"renamed,omitempty"`
	Synced  []string    `json:"synced,omitempty"` // URIs of open documents sent as their next version
}

// Files is every path the edit touched, each once, in order.
func (r EditResult) Files() []string {
	var out []string
	add := func(p string) {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, p := range r.Changed {
		add(p)
	}
	for _, p := range r.Created {
		add(p)
	}
	for _, p := range r.Deleted {
		add(p)
	}
	for _, rn := range r.Renamed {
		add(rn[0])
		add(rn[1])
	}
	return out
}

// EditError is an edit that could not be applied: which change (an index into Ops), and why.
// Changes before it were applied when Applied is set.
type EditError struct {
	Index   int
	Applied bool
	Err     error
}

func (e *EditError) Error() string {
	hint := "nothing was changed"
	if e.Applied {
		hint = "the changes before it were applied"
	}
	return errtext.Format("lsp", "apply edit", "change "+strconv.Itoa(e.Index), nil, e.Err, hint)
}

func (e *EditError) Unwrap() error { return e.Err }

// plannedOp is one change of an edit, checked and ready to run.
type plannedOp struct {
	op      DocumentChange
	path    string // text edit, create, delete: the file; rename: the old path
	newPath string // rename
	text    []byte // text edit: the resulting text
	skip    bool   // a create or rename that IgnoreIfExists, a delete that IgnoreIfNotExists
}

// ApplyEdit applies edit to the files on disk under the workspace root and to the open
// documents. It checks the whole edit first (every file inside the root, each open
// document's version as the edit names it, ranges inside the texts and not overlapping,
// files to create absent unless Overwrite or IgnoreIfExists, files to rename or delete
// present unless IgnoreIfNotExists) and changes nothing when a check fails. Then it runs the
// changes in order: text edits are applied to the text the client holds for an open
// document, else to the file's text on disk, and written to the file (a new file renamed over
// the old one, its mode kept); creates, renames and deletes act on the disk. Open documents
// whose text changed are sent as their next version (Change), open documents renamed or
// deleted are closed, and the server is told of the files changed on disk (FilesChanged).
//
// A failure while running (a write refused by the system) stops there with an *EditError
// whose Applied says that earlier changes stay applied. Check failures wrap ErrOutsideRoot,
// ErrVersionMismatch or ErrBadEdit in an *EditError.
func (c *Client) ApplyEdit(ctx context.Context, edit WorkspaceEdit) (EditResult, error) {
	if err := c.usable(ctx, "apply edit"); err != nil {
		return EditResult{}, err
	}
	ops := edit.Ops()
	plan, err := c.planEdit(ops)
	if err != nil {
		return EditResult{}, err
	}
	res := EditResult{Changed: []string{}}
	var events []FileEvent
	var runErr error
	for i, p := range plan {
		if p.skip {
			continue
		}
		if err := ctx.Err(); err != nil {
			runErr = &EditError{Index: i, Applied: i > 0, Err: err}
			break
		}
		var err error
		switch p.op.Kind {
		case "":
			if err = writeFileAtomic(p.path, p.text); err == nil {
				res.Changed = append(res.Changed, p.path)
				events = append(events, FileEvent{URI: FileURI(p.path), Type: FileChanged})
			}
		case "create":
			if err = writeFileAtomic(p.path, nil); err == nil {
				res.Created = append(res.Created, p.path)
				events = append(events, FileEvent{URI: FileURI(p.path), Type: FileCreated})
			}
		case "rename":
			if err = os.MkdirAll(filepath.Dir(p.newPath), 0o755); err == nil {
				err = os.Rename(p.path, p.newPath)
			}
			if err == nil {
				res.Renamed = append(res.Renamed, [2]string{p.path, p.newPath})
				events = append(events, FileEvent{URI: FileURI(p.path), Type: FileDeleted}, FileEvent{URI: FileURI(p.newPath), Type: FileCreated})
			}
		case "delete":
			if p.op.Options != nil && p.op.Options.Recursive {
				err = os.RemoveAll(p.path)
			} else {
				err = os.Remove(p.path)
			}
			if err == nil {
				res.Deleted = append(res.Deleted, p.path)
				events = append(events, FileEvent{URI: FileURI(p.path), Type: FileDeleted})
			}
		}
		if err != nil {
			runErr = &EditError{Index: i, Applied: i > 0, Err: err}
			break
		}
	}
	// The open documents follow what was written (FilesChanged re-sends or closes them), and
	// the server learns of the files on disk.
	var errs []error
	if runErr != nil {
		errs = append(errs, runErr)
	}
	before := map[string]int{}
	for _, d := range c.Documents() {
		before[d.URI] = d.Version
	}
	if len(events) > 0 {
		if err := c.FilesChanged(ctx, events...); err != nil {
			errs = append(errs, err)
		}
	}
	for _, e := range events {
		if v, was := before[e.URI]; was {
			if d, open := c.Document(e.URI); open && d.Version != v && !slices.Contains(res.Synced, e.URI) {
				res.Synced = append(res.Synced, e.URI)
			}
		}
	}
	return res, errors.Join(errs...)
}

// planEdit checks every change of ops against the disk and the open documents, as they will
// be when the changes before it have run.
func (c *Client) planEdit(ops []DocumentChange) ([]plannedOp, error) {
	type vfile struct {
		exists bool
		text   []byte // nil until read
	}
	files := map[string]*vfile{}
	state := func(p string) *vfile {
		if f := files[p]; f != nil {
			return f
		}
		_, err := os.Lstat(p)
		f := &vfile{exists: err == nil}
		files[p] = f
		return f
	}
	// mkdirs marks the directories above p (up to the root) as existing: writing p makes them.
	mkdirs := func(p string) {
		for d := filepath.Dir(p); len(d) > len(c.cfg.Root); d = filepath.Dir(d) {
			state(d).exists = true
		}
	}
	// gone marks p and everything under it as absent.
	gone := func(p string) {
		state(p)
		for q, f := range files {
			if q == p || strings.HasPrefix(q, p+string(filepath.Separator)) {
				*f = vfile{}
			}
		}
	}
	enc := c.PositionEncoding()
	plan := make([]plannedOp, len(ops))
	for i, op := range ops {
		fail := func(err error) ([]plannedOp, error) { return nil, &EditError{Index: i, Err: err} }
		plan[i].op = op
		switch op.Kind {
		case "":
			p, err := c.editPath(op.TextDocument.URI)
			if err != nil {
				return fail(err)
			}
			plan[i].path = p
			f := state(p)
			if f.text == nil {
				if d, open := c.Document(op.TextDocument.URI); open {
					if v := op.TextDocument.Version; v != nil && *v != d.Version {
						return fail(fmt.Errorf("%w: %s is at version %d, the edit is for version %d", ErrVersionMismatch, op.TextDocument.URI, d.Version, *v))
					}
					f.text, f.exists = []byte(d.Text), true // a copy: the plan edits it
				} else if f.exists {
					if f.text, err = ReadDocument(p, c.cfg.MaxFrameBytes); err != nil {
						return fail(err)
					}
				} else {
					return fail(fmt.Errorf("%w: %s does not exist", ErrBadEdit, p))
				}
			}
			text, err := applyTextEdits(f.text, op.Edits, enc)
			if err != nil {
				return fail(fmt.Errorf("%s: %w", p, err))
			}
			f.text, plan[i].text = text, text
		case "create":
			p, err := c.editPath(op.URI)
			if err != nil {
				return fail(err)
			}
			plan[i].path = p
			f := state(p)
			o := cmp.Or(op.Options, &FileOptions{})
			switch {
			case f.exists && o.Overwrite:
			case f.exists && o.IgnoreIfExists:
				plan[i].skip = true
				continue
			case f.exists:
				return fail(fmt.Errorf("%w: %s exists (neither overwrite nor ignoreIfExists)", ErrBadEdit, p))
			}
			f.exists, f.text = true, []byte{}
			mkdirs(p)
		case "rename":
			from, err := c.editPath(op.OldURI)
			if err != nil {
				return fail(err)
			}
			to, err := c.editPath(op.NewURI)
			if err != nil {
				return fail(err)
			}
			plan[i].path, plan[i].newPath = from, to
			src, dst := state(from), state(to)
			o := cmp.Or(op.Options, &FileOptions{})
			switch {
			case !src.exists:
				return fail(fmt.Errorf("%w: %s does not exist", ErrBadEdit, from))
			case dst.exists && o.Overwrite:
			case dst.exists && o.IgnoreIfExists:
				plan[i].skip = true
				continue
			case dst.exists:
				return fail(fmt.Errorf("%w: %s exists (neither overwrite nor ignoreIfExists)", ErrBadEdit, to))
			}
			*dst = *src
			gone(from)
			mkdirs(to)
		case "delete":
			p, err := c.editPath(op.URI)
			if err != nil {
				return fail(err)
			}
			plan[i].path = p
			f := state(p)
			o := cmp.Or(op.Options, &FileOptions{})
			if !f.exists {
				if o.IgnoreIfNotExists {
					plan[i].skip = true
					continue
				}
				return fail(fmt.Errorf("%w: %s does not exist", ErrBadEdit, p))
			}
			if fi, err := os.Lstat(p); err == nil && fi.IsDir() && !o.Recursive {
				if entries, _ := os.ReadDir(p); len(entries) > 0 {
					return fail(fmt.Errorf("%w: %s is a directory that is not empty (recursive not set)", ErrBadEdit, p))
				}
			}
			gone(p)
		default:
			return fail(fmt.Errorf("%w: unknown kind %q", ErrBadEdit, op.Kind))
		}
	}
	return plan, nil
}

// editPath is the local path of uri, which must lie under the workspace root.
func (c *Client) editPath(uri string) (string, error) {
	p, err := URIToPath(uri)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrBadEdit, err)
	}
	p = filepath.Clean(p)
	rel, err := filepath.Rel(c.cfg.Root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("%w: %s is not under %s", ErrOutsideRoot, p, c.cfg.Root)
	}
	return p, nil
}

// ApplyTextEdits returns text with edits applied, their ranges counted in enc and all taken
// against the original text (as the protocol says). Edits must not overlap; edits that
// insert at the same position are applied in their order. A range outside the text wraps
// ErrPosition, overlapping edits ErrBadEdit.
func ApplyTextEdits(text []byte, edits []TextEdit, enc PositionEncoding) ([]byte, error) {
	return applyTextEdits(text, edits, enc)
}

func applyTextEdits(text []byte, edits []TextEdit, enc PositionEncoding) ([]byte, error) {
	type span struct {
		start, end, order int
		newText           string
	}
	spans := make([]span, 0, len(edits))
	for i, e := range edits {
		s, err := PositionToOffset(text, e.Range.Start, enc)
		if err != nil {
			return nil, fmt.Errorf("edit %d: %w", i, err)
		}
		end, err := PositionToOffset(text, e.Range.End, enc)
		if err != nil {
			return nil, fmt.Errorf("edit %d: %w", i, err)
		}
		if end < s {
			return nil, fmt.Errorf("edit %d: %w: its range ends before it starts", i, ErrBadEdit)
		}
		spans = append(spans, span{s, end, i, e.NewText})
	}
	slices.SortStableFunc(spans, func(a, b span) int { return cmp.Or(cmp.Compare(a.start, b.start), cmp.Compare(a.order, b.order)) })
	size := len(text)
	for i := range spans {
		if i > 0 && spans[i].start < spans[i-1].end {
			return nil, fmt.Errorf("edits %d and %d: %w: they overlap", spans[i-1].order, spans[i].order, ErrBadEdit)
		}
		size += len(spans[i].newText) - (spans[i].end - spans[i].start)
	}
	out := make([]byte, 0, size)
	at := 0
	for _, s := range spans {
		out = append(out, text[at:s.start]...)
		out = append(out, s.newText...)
		at = s.end
	}
	return append(out, text[at:]...), nil
}

// writeFileAtomic replaces the file at p with data: a new file in the same directory, renamed
// over it, with the old file's mode (0644 for a new one). A symbolic link at p is replaced,
// never followed.
func writeFileAtomic(p string, data []byte) error {
	mode := fs.FileMode(0o644)
	if fi, err := os.Lstat(p); err == nil && fi.Mode().IsRegular() {
		mode = fi.Mode().Perm()
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), "."+filepath.Base(p)+".subkit-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	cerr := f.Close()
	if err := errors.Join(werr, cerr, os.Chmod(tmp, mode)); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

type clientKey struct{}

// ClientFrom returns the Client whose server sent the request a RequestHandler is answering
// (its ctx carries it), or nil.
func ClientFrom(ctx context.Context) *Client {
	c, _ := ctx.Value(clientKey{}).(*Client)
	return c
}

// ApplyEditHandler answers workspace/applyEdit by applying the edit with Client.ApplyEdit.
// Put it in Config.Handlers["workspace/applyEdit"] (the client then declares
// workspace.applyEdit): commands the server runs (workspace/executeCommand: organize imports,
// fixes) then change the files and open documents. A refused edit is answered
// {applied: false, failureReason, failedChange}.
func ApplyEditHandler(ctx context.Context, params json.RawMessage) (any, error) {
	c := ClientFrom(ctx)
	if c == nil {
		return nil, &RPCError{Code: CodeInternalError, Message: "workspace/applyEdit: no client in the handler's context"}
	}
	var p struct {
		Label string        `json:"label"`
		Edit  WorkspaceEdit `json:"edit"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, &RPCError{Code: CodeInvalidParams, Message: "workspace/applyEdit: " + err.Error()}
	}
	_, err := c.ApplyEdit(ctx, p.Edit)
	if err != nil {
		res := ApplyEditResult{Applied: false, FailureReason: err.Error()}
		var ee *EditError
		if errors.As(err, &ee) {
			idx := ee.Index
			res.FailedChange = &idx
			if ee.Applied {
				res.FailureReason += "; the changes before it were applied"
			}
		}
		return res, nil
	}
	return ApplyEditResult{Applied: true}, nil
}
