package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// landlockABI is the kernel's Landlock ABI version: 0 when Landlock is missing or disabled.
func landlockABI() (int, error) {
	v, err := ll.LandlockGetABIVersion()
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EOPNOTSUPP) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return v, nil
}

// landlockConfig is the configuration handling every right ABI abi knows; with the network on
// it handles no network right.
func landlockConfig(abi int, networkOff bool) (landlock.Config, error) {
	presets := []landlock.Config{landlock.V1, landlock.V2, landlock.V3, landlock.V4, landlock.V5, landlock.V6,
		landlock.V7, landlock.V8, landlock.V9, landlock.V10, landlock.V11}
	if abi < 1 {
		return landlock.Config{}, fmt.Errorf("no Landlock (ABI %d)", abi)
	}
	cfg := presets[min(abi, len(presets))-1]
	if !networkOff {
		cfg.HandledAccessNet = 0
	}
	return cfg, nil
}

// The rights granted, before they are cut to what the configuration handles.
const (
	readFileRights  = ll.AccessFSExecute | ll.AccessFSReadFile
	readDirRights   = readFileRights | ll.AccessFSReadDir
	writeFileRights = readFileRights | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
	// devRights are those of the character devices a program needs (null, tty, ptys, ...).
	devRights = ll.AccessFSReadFile | ll.AccessFSWriteFile | ll.AccessFSTruncate | ll.AccessFSIoctlDev
)

// holeKind says why the walk must not grant a whole hierarchy.
type holeKind int

const (
	hiddenFile holeKind = iota
	hiddenDir
	devHole // /dev: listable, only a few devices and /dev/pts openable
)

type hole struct {
	path string
	kind holeKind
}

// ruleWalk collects the Landlock rules of a plan.
type ruleWalk struct {
	handled landlock.AccessFSSet
	rules   []landlock.Rule
}

func (w *ruleWalk) add(rights landlock.AccessFSSet, path string) {
	if r := rights & w.handled; r != 0 {
		w.rules = append(w.rules, landlock.PathAccess(r, path).IgnoreIfMissing())
	}
}

// landlockRules returns the rules that make everything readable but the hidden paths (and
// /dev, but for its devFiles), and the writable roots writable but for the hidden paths
// beneath them.
//
// Landlock rules only add access, so a hidden path cannot be cut out of a grant on one of its
// ancestors: instead of granting read on /, the walk grants it on each sibling of each
// ancestor of a hidden path (and lists the ancestor only when no hidden directory lies
// beneath it). See doc.go for what this costs.
func landlockRules(cfg landlock.Config, writable []string, hidden []hiddenPath) []landlock.Rule {
	w := &ruleWalk{handled: cfg.HandledAccessFS}
	holes := []hole{{path: "/dev", kind: devHole}}
	for _, h := range hidden {
		k := hiddenFile
		if h.Dir {
			k = hiddenDir
		}
		holes = append(holes, hole{path: h.Path, kind: k})
	}
	allFS := cfg.HandledAccessFS
	w.grant("/", readDirRights, readFileRights, holes)
	for _, root := range writable {
		var under []hole
		for _, h := range holes {
			if h.kind == devHole && h.path == root {
				continue // /dev itself asked for: granted whole
			}
			if within(h.path, root) {
				under = append(under, h)
			}
		}
		w.grant(root, allFS, writeFileRights, under)
	}
	// The devices of /dev a confined program may open; the rest of /dev can be listed but not
	// opened (block devices would give a root program the raw disk). /dev/pts: the program's
	// terminal, and ptys it opens itself.
	w.add(ll.AccessFSReadDir|devRights, "/dev/pts")
	for _, f := range []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"} {
		w.add(devRights, f)
	}
	return w.rules
}

// grant gives p and everything beneath it dirRights (fileRights on a file), but for the holes.
func (w *ruleWalk) grant(p string, dirRights, fileRights landlock.AccessFSSet, holes []hole) {
	var beneath []hole
	for _, h := range holes {
		if h.path == p {
			if h.kind == devHole {
				w.add(ll.AccessFSReadDir, p)
			}
			return
		}
		if within(h.path, p) {
			beneath = append(beneath, h)
		}
	}
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
		return // gone, or unreadable to this process too; a link is followed where it points
	}
	if !fi.IsDir() {
		w.add(fileRights, p)
		return
	}
	if len(beneath) == 0 {
		w.add(dirRights, p)
		return
	}
	listable := true
	for _, h := range beneath {
		if h.kind == hiddenDir {
			listable = false
		}
	}
	if listable {
		w.add(ll.AccessFSReadDir, p)
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return // not readable to this process either: nothing beneath is granted
	}
	for _, e := range entries {
		if e.Type()&fs.ModeSymlink != 0 {
			continue
		}
		w.grant(filepath.Join(p, e.Name()), dirRights, fileRights, beneath)
	}
}

// within reports whether p lies strictly beneath dir.
func within(p, dir string) bool {
	if dir == "/" {
		return p != "/"
	}
	return strings.HasPrefix(p, dir+"/")
}

// restrictLandlock confines the calling thread (locked, and the one that will exec) with the
// plan's rules. NO_NEW_PRIVS must be set already.
func restrictLandlock(pl *plan) error {
	abi, err := landlockABI()
	if err != nil {
		return fmt.Errorf("reading the Landlock ABI: %w", err)
	}
	if abi < pl.ABI || abi < 1 {
		return fmt.Errorf("Landlock ABI %d here, the plan needs %d", abi, max(pl.ABI, 1))
	}
	cfg, err := landlockConfig(pl.ABI, pl.NetworkOff)
	if err != nil {
		return err
	}
	rules := landlockRules(cfg, pl.Writable, pl.Hidden)
	fd, flags, err := cfg.NewRulesetFD(rules...)
	if err != nil {
		return fmt.Errorf("building the Landlock ruleset: %w", err)
	}
	if fd < 0 {
		return errors.New("building the Landlock ruleset: nothing to restrict")
	}
	defer unix.Close(fd)
	if err := ll.LandlockRestrictSelf(fd, flags); err != nil {
		return fmt.Errorf("landlock_restrict_self: %w", err)
	}
	return nil
}
