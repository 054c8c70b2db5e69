package bash

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

	"github.com/subkit/subkit/subprocess"
)

// Spill retention.
//
// Layout under the spill root (Config.SpillDir):
//
//	subkit-bash-XXXX/          one per Executor, 0700, random name
//	    .lock                  held (flock) while the Executor is open; records its SpillMaxAge
//	    subkit-spill-YYYY/     the Executor's Service's spill directory, made when first needed
//	        stdout-ZZZZ.log    one per stream that needed a spill file
//
// A sweep looks only at subkit-bash-* directories and never follows a symlink. A file is in
// use, and never touched, when it belongs to a live Executor other than the sweeping one (its
// lock is held), or, in the sweeping Executor, to a command that has not been released (still
// running, or a background Process not yet closed): a released command's files are those its
// result named. Everything else is a candidate: first those not written for longer than the
// maximum age go (for a closed executor's files, the maximum age its lock file records, never
// the sweeping executor's), then the oldest of this executor's own (and of directories that
// record no policy) until all spill files under the root, in use or not, fit in the total: a
// closed executor's file younger than its own maximum age is never removed, so a file a
// `subkit bash` run printed for the model stays readable whatever another executor's policy
// says. Emptied directories are removed.
const (
	execDirPrefix = "subkit-bash-"
	lockName      = ".lock"
	// lockless is how long a directory without a lock file is taken to be in creation.
	lockless = time.Minute
)

// spillStore is one Executor's share of the spill root.
type spillStore struct {
	root     string
	dir      string   // this executor's directory
	lock     *os.File // its lock, held until close
	maxAge   time.Duration
	maxTotal int64

	mu       sync.Mutex // serialises sweeps and guards released
	released map[string]bool
	closed   bool
}

func openStore(root string, maxAge time.Duration, maxTotal int64) (*spillStore, error) {
	if root == "" {
		root = os.TempDir()
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, &ConfigError{Key: "spillDir", Field: "SpillDir", Err: err}
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, &ConfigError{Key: "spillDir", Field: "SpillDir", Err: err}
	}
	s := &spillStore{root: root, maxAge: maxAge, maxTotal: maxTotal, released: map[string]bool{}}
	for try := 0; try < 3; try++ {
		dir, lock, err := makeExecDir(root, maxAge)
		if err != nil {
			return nil, &ConfigError{Key: "spillDir", Field: "SpillDir", Err: err}
		}
		if lock != nil {
			s.dir, s.lock = dir, lock
			return s, nil
		}
	}
	return nil, &ConfigError{Key: "spillDir", Field: "SpillDir",
		Err: errors.New("concurrent sweeps kept removing the new spill directory")}
}

// makeExecDir creates a fresh executor directory with its lock held. It returns a nil lock
// and no error when a concurrent sweep removed the directory before the lock was taken.
func makeExecDir(root string, maxAge time.Duration) (string, *os.File, error) {
	dir, err := os.MkdirTemp(root, execDirPrefix)
	if err != nil {
		return "", nil, err
	}
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil, nil
	}
	if err != nil {
		os.Remove(dir)
		return "", nil, err
	}
	// A file system without locks leaves the directory unlocked: other executors then take
	// it for live (they cannot lock it either) until it is older than the maximum age.
	if ok, err := tryLock(f); err == nil && !ok {
		f.Close()
		return "", nil, nil
	}
	// A sweep may have taken the lock between create and lock, and removed it: check that
	// the path still names the file we hold.
	fi, ferr := f.Stat()
	pi, perr := os.Stat(path)
	if ferr != nil || perr != nil || !os.SameFile(fi, pi) {
		f.Close()
		return "", nil, nil
	}
	// The lock file records this executor's maximum age: once it is gone, another executor's
	// sweep keeps its files that long, whatever its own policy says.
	if _, err := fmt.Fprintf(f, "%s%d\n", maxAgeKey, maxAge.Milliseconds()); err != nil {
		f.Close()
		return "", nil, err
	}
	return dir, f, nil
}

// maxAgeKey starts the line of a lock file that records its executor's SpillMaxAge.
const maxAgeKey = "spillMaxAgeMs="

// recordedMaxAge is the maximum age a lock file records, if it records one.
func recordedMaxAge(f *os.File) (time.Duration, bool) {
	b := make([]byte, 64)
	n, _ := f.ReadAt(b, 0)
	line, _, _ := strings.Cut(string(b[:n]), "\n")
	v, ok := strings.CutPrefix(line, maxAgeKey)
	if !ok {
		return 0, false
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 {
		return 0, false
	}
	return time.Duration(ms) * time.Millisecond, true
}

// release marks a command's spill files as no longer in use.
func (s *spillStore) release(r subprocess.Result) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, path := range []string{r.Stdout.SpillPath, r.Stderr.SpillPath} {
		if path != "" {
			s.released[path] = true
		}
	}
}

// spillFile is one candidate or counted file of a sweep.
type spillFile struct {
	path   string
	size   int64
	mod    time.Time
	keep   time.Duration // removed once older than this: its own executor's maximum age
	capped bool          // the total cap may remove it sooner: this executor's, or of a policy unknown
}

// sweep applies the retention policy. With all set (at close), every directory of this
// executor counts as released.
func (s *spillStore) sweep(ctx context.Context, all bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	ents, err := os.ReadDir(s.root)
	if err != nil {
		return &Error{Op: "sweep", Name: s.root, Err: err}
	}
	var (
		cands   []spillFile
		total   int64
		held    []*os.File // locks of dead executors' dirs, held for the sweep
		dirs    []string   // command dirs whose files may all go
		deadDir []string   // dead executors' dirs, removed when emptied
		errs    []error
	)
	defer func() {
		for _, f := range held {
			f.Close()
		}
	}()
	for _, ent := range ents {
		if err := ctx.Err(); err != nil {
			return &Error{Op: "sweep", Name: s.root, Err: err}
		}
		if !ent.IsDir() || !strings.HasPrefix(ent.Name(), execDirPrefix) {
			continue // not ours (a symlink is not a dir entry of type dir)
		}
		dir := filepath.Join(s.root, ent.Name())
		own := dir == s.dir
		free := own // may this executor dir's released files go?
		keep, capped := s.maxAge, true
		if !own {
			lock, state := s.foreign(dir)
			if state == dirUnreadable {
				continue
			}
			if lock != nil {
				held = append(held, lock)
				if age, ok := recordedMaxAge(lock); ok {
					keep, capped = age, false // the files' own policy, not this one's
				}
			}
			free = state == dirDead
			if free {
				deadDir = append(deadDir, dir)
			}
		}
		subs, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, sub := range subs {
			if !sub.IsDir() {
				continue // the lock, or something not made by the Service
			}
			cdir := filepath.Join(dir, sub.Name())
			for _, f := range listFiles(cdir) {
				total += f.size
				if free && (!own || all || s.released[f.path]) {
					f.keep, f.capped = keep, capped
					cands = append(cands, f)
				}
			}
			if free {
				dirs = append(dirs, cdir)
			}
		}
	}

	now := time.Now()
	slices.SortFunc(cands, func(a, b spillFile) int { return a.mod.Compare(b.mod) })
	remove := func(f spillFile) {
		if err := os.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
			return
		}
		delete(s.released, f.path)
		total -= f.size
	}
	kept := cands[:0]
	for _, f := range cands {
		if now.Sub(f.mod) > f.keep {
			remove(f)
		} else if f.capped {
			kept = append(kept, f) // another executor's file is never removed younger than its own maximum age
		}
	}
	for _, f := range kept {
		if total <= s.maxTotal {
			break
		}
		remove(f)
	}
	for _, d := range dirs {
		os.Remove(d) // only once empty
	}
	for _, d := range deadDir {
		removeIfOnlyLock(d)
	}
	if len(errs) > 0 {
		return &Error{Op: "sweep", Name: s.root, Err: errors.Join(errs...)}
	}
	return nil
}

type dirState int

const (
	dirLive dirState = iota
	dirDead
	dirUnreadable
)

// foreign tells whether another executor's directory is in use. For a dead one it returns its
// lock, held, when there is one.
func (s *spillStore) foreign(dir string) (*os.File, dirState) {
	if !lockSupported {
		return nil, dirLive // cannot tell: never touch another executor's files
	}
	f, err := os.OpenFile(filepath.Join(dir, lockName), os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		fi, serr := os.Stat(dir)
		if serr != nil {
			return nil, dirUnreadable
		}
		if time.Since(fi.ModTime()) < lockless {
			return nil, dirLive // being created
		}
		return nil, dirDead
	}
	if err != nil {
		return nil, dirUnreadable // another user's, most likely
	}
	ok, err := tryLock(f)
	if err != nil || !ok {
		f.Close()
		return nil, dirLive
	}
	return f, dirDead
}

// listFiles lists the regular files of dir.
func listFiles(dir string) []spillFile {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []spillFile
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, spillFile{path: filepath.Join(dir, e.Name()), size: fi.Size(), mod: fi.ModTime()})
	}
	return out
}

// removeIfOnlyLock removes an executor directory that holds nothing but its lock.
func removeIfOnlyLock(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if e.Name() != lockName {
			return false
		}
	}
	os.Remove(filepath.Join(dir, lockName))
	return os.Remove(dir) == nil
}

// close sweeps with every command released, removes this executor's directory when nothing
// is left in it, and releases the lock. The files kept stay for a later sweep.
func (s *spillStore) close(ctx context.Context) error {
	err := s.sweep(ctx, true)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	removeIfOnlyLock(s.dir)
	if cerr := s.lock.Close(); cerr != nil && err == nil {
		err = &Error{Op: "close", Name: s.dir, Err: fmt.Errorf("release spill lock: %w", cerr)}
	}
	return err
}
