package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The Landlock calls are made with x/sys/unix directly: the helper restricts only the thread
// that execs (execve keeps that thread's domain and ends every other), so it needs none of the
// all-threads machinery of go-landlock, whose psx package links libpsx (cgo, and a wrapped
// pthread_create) into every program that imports the kit.

// landlockABI is the kernel's Landlock ABI version: 0 when Landlock is missing or disabled.
func landlockABI() (int, error) {
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	switch {
	case errno == unix.ENOSYS || errno == unix.EOPNOTSUPP:
		return 0, nil
	case errno != 0:
		return 0, fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	return int(v), nil
}

// maxABI is the newest Landlock ABI whose rights the sandbox knows; a newer kernel is used as
// this one.
const maxABI = 7

// landlockHandled is what a ruleset handles under ABI abi: every file-system right the ABI
// knows, with the network off its TCP rights (ABI 4), and its scopes (ABI 6: abstract Unix
// sockets and signals to processes outside the domain).
type landlockHandled struct {
	fs, net, scoped uint64
}

func landlockConfig(abi int, networkOff bool) (landlockHandled, error) {
	if abi < 1 {
		return landlockHandled{}, fmt.Errorf("no Landlock (ABI %d)", abi)
	}
	abi = min(abi, maxABI)
	h := landlockHandled{fs: unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_FILE | unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK | unix.LANDLOCK_ACCESS_FS_MAKE_FIFO |
		unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK | unix.LANDLOCK_ACCESS_FS_MAKE_SYM}
	if abi >= 2 {
		h.fs |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		h.fs |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 4 && networkOff {
		h.net = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	}
	if abi >= 5 {
		h.fs |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	if abi >= 6 {
		h.scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	}
	return h, nil
}

// fileOnlyRights are the rights that apply to a file that is not a directory: a rule for a
// file may carry no other (the kernel refuses it).
const fileOnlyRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
	unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV

// The rights granted, before they are cut to what the configuration handles.
const (
	readFileRights  = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_READ_FILE
	readDirRights   = readFileRights | unix.LANDLOCK_ACCESS_FS_READ_DIR
	writeFileRights = readFileRights | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	// devRights are those of the character devices a program needs (null, tty, ptys, ...).
	devRights = unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
)

// landlockRule grants rights beneath path (on path alone, for a file).
type landlockRule struct {
	rights uint64
	path   string
}

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
	handled uint64
	rules   []landlockRule
}

func (w *ruleWalk) add(rights uint64, path string) {
	if r := rights & w.handled; r != 0 {
		w.rules = append(w.rules, landlockRule{rights: r, path: path})
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
func landlockRules(cfg landlockHandled, writable []string, hidden []pathEntry) []landlockRule {
	w := &ruleWalk{handled: cfg.fs}
	holes := []hole{{path: "/dev", kind: devHole}}
	for _, h := range hidden {
		k := hiddenFile
		if h.Dir {
			k = hiddenDir
		}
		holes = append(holes, hole{path: h.Path, kind: k})
	}
	allFS := cfg.fs
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
	// opened (block devices would give a root program the raw disk). Of /dev/pts, only the
	// program's own terminal: no other terminal of the host's user can be opened (a pty the
	// program makes through /dev/ptmx is reached by TIOCGPTPEER, as openpty does).
	w.add(unix.LANDLOCK_ACCESS_FS_READ_DIR, "/dev/pts")
	for _, f := range append([]string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx"}, ownTerminals()...) {
		w.add(devRights, f)
	}
	return w.rules
}

// ownTerminals are the ptys under /dev/pts this process has as stdin, stdout or stderr.
func ownTerminals() []string {
	var out []string
	for fd := range 3 {
		p, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", fd))
		if err == nil && strings.HasPrefix(p, "/dev/pts/") && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// namespaceRules are the rules of the namespaced routes, whose mounts already hide what is
// hidden and make the rest read-only: read everywhere but the hidden paths that did not exist
// at the start (outside the writable roots: so that a credential store made while the program
// runs stays out of its reach, and the directories holding them can still be listed), write in
// the writable roots and the private file systems, the minimal /dev usable. They also hold
// the file system should a mount be missing, and bring Landlock's scopes.
func namespaceRules(cfg landlockHandled, writable, private, absent []string) []landlockRule {
	w := &ruleWalk{handled: cfg.fs}
	var holes []hole
	for _, a := range absent {
		if !beneathAny(a, writable) {
			holes = append(holes, hole{path: a, kind: hiddenFile})
		}
	}
	w.grant("/", readDirRights, readFileRights, holes)
	w.add(unix.LANDLOCK_ACCESS_FS_READ_DIR|devRights, "/dev")
	for _, root := range append(slices.Clone(writable), private...) {
		w.add(cfg.fs, root)
	}
	return w.rules
}

// grant gives p and everything beneath it dirRights (fileRights on a file), but for the holes.
func (w *ruleWalk) grant(p string, dirRights, fileRights uint64, holes []hole) {
	var beneath []hole
	for _, h := range holes {
		if h.path == p {
			if h.kind == devHole {
				w.add(unix.LANDLOCK_ACCESS_FS_READ_DIR, p)
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
		w.add(unix.LANDLOCK_ACCESS_FS_READ_DIR, p)
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
	if len(pl.Mounts) > 0 {
		rules = namespaceRules(cfg, pl.Writable, privateWritable(pl.Mounts), pl.Absent)
	}
	fd, err := newRuleset(cfg, rules)
	if err != nil {
		return fmt.Errorf("building the Landlock ruleset: %w", err)
	}
	defer unix.Close(fd)
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(fd), 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %w", errno)
	}
	return nil
}

// newRuleset makes a ruleset handling cfg's rights with rules added; a rule whose path does not
// exist (any more) is left out, and a rule for a file that is not a directory keeps only the
// rights that apply to files.
func newRuleset(cfg landlockHandled, rules []landlockRule) (int, error) {
	attr := unix.LandlockRulesetAttr{Handled_access_fs: cfg.fs, Handled_access_net: cfg.net, Scoped: cfg.scoped}
	// The whole struct: an older kernel takes the fields it does not know when they are zero.
	r, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), unsafe.Sizeof(attr), 0)
	if errno != 0 {
		return -1, fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	fd := int(r)
	for _, rule := range rules {
		if err := addPathRule(fd, rule); err != nil {
			unix.Close(fd)
			return -1, err
		}
	}
	return fd, nil
}

func addPathRule(ruleset int, rule landlockRule) error {
	fd, err := unix.Open(rule.path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil // gone since the walk listed it
	}
	if err != nil {
		return fmt.Errorf("open %s: %w", rule.path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", rule.path, err)
	}
	rights := rule.rights
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		rights &= fileOnlyRights
	}
	if rights == 0 {
		return nil
	}
	attr := unix.LandlockPathBeneathAttr{Allowed_access: rights, Parent_fd: int32(fd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("landlock_add_rule %s: %w", rule.path, errno)
	}
	return nil
}
