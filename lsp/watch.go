package lsp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// FileChangeType is what happened to a file (workspace/didChangeWatchedFiles).
type FileChangeType int

const (
	FileCreated FileChangeType = 1
	FileChanged FileChangeType = 2
	FileDeleted FileChangeType = 3
)

func (t FileChangeType) String() string {
	switch t {
	case FileCreated:
		return "created"
	case FileChanged:
		return "changed"
	case FileDeleted:
		return "deleted"
	}
	return "file change type " + strconv.Itoa(int(t))
}

// FileEvent is one file that changed on disk: its file:// URI and what happened.
type FileEvent struct {
	URI  string         `json:"uri"`
	Type FileChangeType `json:"type"`
}

// FilesChanged tells the server that files changed on disk, for callers that know what they
// changed (and for the watcher of Config.WatchFiles, which calls it).
//
// First, each open document an event names follows the disk (the disk wins over the copy
// the client holds): a deleted or unreadable file is closed (CloseDocument), a file whose
// text differs from the client's copy is sent as its next version (Change, the whole text).
// Then the events go to the server in one workspace/didChangeWatchedFiles notification,
// keeping those that match a watcher the server registered (glob pattern and kind); a server
// that registered no watcher gets every event. Diagnostics held from before a notification
// are not taken as current after it (see Client.Diagnostics). It fails with
// subprocess.ErrInvalid for an event without a URI or with an unknown type, with ctx's error,
// or with the connection's error.
func (c *Client) FilesChanged(ctx context.Context, events ...FileEvent) error {
	if err := c.usable(ctx, "workspace/didChangeWatchedFiles"); err != nil {
		return err
	}
	for i, e := range events {
		if e.URI == "" || e.Type < FileCreated || e.Type > FileDeleted {
			return invalidArg("files changed", e.URI, fmt.Sprintf("event %d (%v): want a URI and FileCreated, FileChanged or FileDeleted", i, e.Type))
		}
	}
	var errs []error
	for _, e := range events {
		if err := c.followDisk(ctx, e); err != nil {
			errs = append(errs, err)
		}
	}
	send := c.watched(events)
	if len(send) == 0 {
		return errors.Join(errs...)
	}
	if err := c.lockDocs(ctx); err != nil {
		return errors.Join(append(errs, err)...)
	}
	_, err := c.notify(ctx, "workspace/didChangeWatchedFiles", map[string]any{"changes": send}, func() {
		c.diagMu.Lock()
		c.fileGen++
		c.gen++
		c.diagMu.Unlock()
	})
	c.unlockDocs()
	return errors.Join(append(errs, err)...)
}

// followDisk brings the open document of e (if any) in line with the disk.
func (c *Client) followDisk(ctx context.Context, e FileEvent) error {
	d, open := c.Document(e.URI)
	if !open {
		return nil
	}
	p, err := URIToPath(e.URI)
	if err != nil {
		return nil // not a file: nothing on disk to follow
	}
	var text []byte
	if e.Type != FileDeleted {
		text, err = ReadDocument(p, c.cfg.MaxFrameBytes)
	}
	if e.Type == FileDeleted || err != nil {
		if cerr := c.CloseDocument(ctx, e.URI); cerr != nil && !errors.Is(cerr, ErrNotOpen) {
			return cerr
		}
		return nil
	}
	if string(text) == d.Text {
		return nil
	}
	_, err = c.Change(ctx, e.URI, TextChange{Text: string(text)})
	if errors.Is(err, ErrNotOpen) { // closed meanwhile
		return nil
	}
	return err
}

// watched keeps the events the server's registered watchers want; every event when it
// registered none.
func (c *Client) watched(events []FileEvent) []FileEvent {
	c.docMu.Lock()
	var ws []fileWatcher
	registered := false
	for _, r := range c.regs {
		if r.Method == "workspace/didChangeWatchedFiles" {
			registered = true
			w, err := parseWatchers(r.RegisterOptions)
			if err != nil {
				c.log.Debug("lsp: watcher registration", "err", err)
			}
			ws = append(ws, w...)
		}
	}
	c.docMu.Unlock()
	if !registered {
		return events
	}
	var out []FileEvent
	for _, e := range events {
		p, err := URIToPath(e.URI)
		if err != nil {
			continue
		}
		if slices.ContainsFunc(ws, func(w fileWatcher) bool { return w.matches(p, e.Type) }) {
			out = append(out, e)
		}
	}
	return out
}

// Directories the watcher of Config.WatchFiles does not descend into (.cache: clangd writes
// its background index there, inside the root).
var unwatchedDirs = []string{".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", ".cache"}

// maxWatchedDirs bounds the directories one watcher watches.
const maxWatchedDirs = 8192

// watchDebounce gathers the events of one burst of writes into one notification.
const watchDebounce = 30 * time.Millisecond

// rootWatcher feeds FilesChanged from the file system under the workspace root.
type rootWatcher struct {
	c        *Client
	w        *fsnotify.Watcher
	sentinel string // a private directory, watched too: its events mark a point in the queue
	dirs     int

	mu      sync.Mutex
	flushes map[string]chan struct{} // sentinel file -> closed once the events before it are sent
	next    int

	done chan struct{}
	stop chan struct{}
	once sync.Once
}

// startWatcher watches every directory under root (but unwatchedDirs) and a sentinel
// directory under dir.
func startWatcher(c *Client, root, dir string) (*rootWatcher, error) {
	w, err := fsnotify.NewBufferedWatcher(1024)
	if err != nil {
		return nil, newError("watch", root, nil, err)
	}
	rw := &rootWatcher{c: c, w: w, flushes: map[string]chan struct{}{}, done: make(chan struct{}), stop: make(chan struct{})}
	if rw.sentinel, err = os.MkdirTemp(dir, "lsp-watch-"); err != nil {
		w.Close()
		return nil, newError("watch", root, nil, fmt.Errorf("sentinel directory: %w", err))
	}
	if err := w.Add(rw.sentinel); err != nil {
		w.Close()
		os.RemoveAll(rw.sentinel)
		return nil, newError("watch", rw.sentinel, nil, err)
	}
	rw.addTree(root, nil)
	go rw.run()
	return rw, nil
}

// addTree watches dir and the directories under it; found, when set, gets a created event
// for every file and directory met (a directory made after the watch began may have been
// filled before its watch was added).
func (rw *rootWatcher) addTree(dir string, found func(string)) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if !d.IsDir() {
			if found != nil {
				found(p)
			}
			return nil
		}
		if p != dir && slices.Contains(unwatchedDirs, d.Name()) {
			return filepath.SkipDir
		}
		if rw.dirs >= maxWatchedDirs {
			rw.c.log.Warn("lsp: too many directories to watch; the rest are not watched", "max", maxWatchedDirs, "dir", p)
			return filepath.SkipAll
		}
		if err := rw.w.Add(p); err != nil {
			rw.c.log.Debug("lsp: watch", "dir", p, "err", err)
			return nil
		}
		rw.dirs++
		if found != nil && p != dir {
			found(p)
		}
		return nil
	})
}

func (rw *rootWatcher) run() {
	defer close(rw.done)
	pending := map[string]FileChangeType{}
	var order []string
	t := time.NewTimer(time.Hour)
	t.Stop()
	add := func(p string, typ FileChangeType) {
		old, ok := pending[p]
		switch {
		case !ok:
			order = append(order, p)
		case old == FileCreated && typ == FileChanged:
			return // still new to the server
		}
		pending[p] = typ
	}
	deliver := func() {
		if len(order) == 0 {
			return
		}
		events := make([]FileEvent, 0, len(order))
		for _, p := range order {
			events = append(events, FileEvent{URI: FileURI(p), Type: pending[p]})
		}
		clear(pending)
		order = order[:0]
		if err := rw.c.FilesChanged(rw.c.reqCtx, events...); err != nil && rw.c.reqCtx.Err() == nil {
			rw.c.log.Warn("lsp: watched files not sent", "err", err)
		}
	}
	for {
		select {
		case <-rw.stop:
			return
		case err, ok := <-rw.w.Errors:
			if !ok {
				return
			}
			rw.c.log.Warn("lsp: file watcher", "err", err) // an overflow: events were lost
		case <-t.C:
			deliver()
		case ev, ok := <-rw.w.Events:
			if !ok {
				return
			}
			if filepath.Dir(ev.Name) == rw.sentinel {
				if ev.Has(fsnotify.Create) {
					deliver()
					rw.mu.Lock()
					if ch := rw.flushes[ev.Name]; ch != nil {
						close(ch)
						delete(rw.flushes, ev.Name)
					}
					rw.mu.Unlock()
				}
				continue
			}
			switch {
			case ev.Has(fsnotify.Create):
				add(ev.Name, FileCreated)
				if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() && !slices.Contains(unwatchedDirs, fi.Name()) {
					rw.addTree(ev.Name, func(p string) { add(p, FileCreated) })
				}
			case ev.Has(fsnotify.Write):
				add(ev.Name, FileChanged)
			case ev.Has(fsnotify.Remove), ev.Has(fsnotify.Rename):
				add(ev.Name, FileDeleted)
			default:
				continue // chmod
			}
			t.Reset(watchDebounce)
		}
	}
}

// flush returns once every event the file system queued before the call has been sent (on
// Linux, where one inotify queue keeps the order; elsewhere, once the events read so far
// are).
func (rw *rootWatcher) flush(ctx context.Context) error {
	rw.mu.Lock()
	rw.next++
	name := filepath.Join(rw.sentinel, "flush-"+strconv.Itoa(rw.next))
	ch := make(chan struct{})
	rw.flushes[name] = ch
	rw.mu.Unlock()
	defer os.Remove(name)
	if err := os.WriteFile(name, nil, 0o600); err != nil {
		rw.mu.Lock()
		delete(rw.flushes, name)
		rw.mu.Unlock()
		return newError("flush the file watcher", "", nil, err)
	}
	select {
	case <-ch:
		return nil
	case <-rw.done:
		return newError("flush the file watcher", "", ErrClosed, nil)
	case <-ctx.Done():
		rw.mu.Lock()
		delete(rw.flushes, name)
		rw.mu.Unlock()
		return ctxError("flush the file watcher", "", ctx.Err())
	}
}

// close stops the watcher and waits for it; safe to call more than once.
func (rw *rootWatcher) close() {
	rw.once.Do(func() {
		close(rw.stop)
		<-rw.done
		rw.w.Close()
		os.RemoveAll(rw.sentinel)
	})
}

// SyncFiles makes the server's view of the disk current before a question: the events the
// watcher of Config.WatchFiles has seen up to now are sent (FilesChanged), and every open
// document whose file changed on disk is sent again, or closed when its file is gone, whether
// or not a watcher saw it. Without Config.WatchFiles only the open documents are compared.
func (c *Client) SyncFiles(ctx context.Context) error {
	if err := c.usable(ctx, "sync files"); err != nil {
		return err
	}
	var errs []error
	if c.watcher != nil {
		if err := c.watcher.flush(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	for _, d := range c.Documents() {
		if !strings.HasPrefix(d.URI, "file:") {
			continue
		}
		if err := c.followDisk(ctx, FileEvent{URI: d.URI, Type: FileChanged}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
