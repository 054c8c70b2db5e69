package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxArgLen is MAX_ARG_STRLEN: Linux refuses a single argument or environment string of this
// many bytes or more (the terminating NUL counted) with E2BIG.
const maxArgLen = 32 * 4096

// resolved is a Policy and a Program checked and made absolute.
type resolved struct {
	prog       Program
	writable   []string    // resolved writable roots, TempDir included
	hidden     []pathEntry // resolved hidden paths that exist
	absent     []string    // hidden paths that do not exist (yet), as expanded
	protected  []pathEntry // resolved protected paths that exist within a writable root
	pinned     []pathEntry // directories and links within writable roots that lead to hidden or protected paths (see pin)
	sockets    []string    // resolved Unix sockets the program may connect to
	networkOff bool
	allowList  bool // NetworkAllowList: allow and deny go to the proxy at proxy
	allow      []string
	deny       []string
	proxy      string // resolved Program.Proxy
	limits     Limits
}

// resolve checks p and prog and resolves every path. Its errors are *Error of kind ErrInvalid
// or ErrNotFound.
func resolve(p *Policy, prog Program) (*resolved, error) {
	const op = "prepare"
	if p == nil {
		return nil, invalid(op, "Policy", "nil policy (use &sandbox.Policy{} for the defaults)")
	}
	if err := checkProgram(prog, p.Writable == nil); err != nil {
		return nil, err
	}
	r := &resolved{prog: prog, limits: p.Limits}
	switch p.Network {
	case NetworkOff:
		r.networkOff = true
	case NetworkOn:
	case NetworkAllowList:
		if err := r.resolveAllowList(p, prog); err != nil {
			return nil, err
		}
	default:
		return nil, invalid(op, "Policy.Network", "unknown value %d (use NetworkOff, NetworkOn or NetworkAllowList)", int(p.Network))
	}
	if p.Network != NetworkAllowList && (len(p.Allow) > 0 || len(p.Deny) > 0) {
		return nil, invalid(op, "Policy.Allow", "Allow and Deny apply with Network NetworkAllowList only (Network is %s)", p.Network)
	}
	if err := checkLimits(p.Limits); err != nil {
		return nil, err
	}

	writable := p.Writable
	if writable == nil {
		writable = []string{prog.Dir}
	}
	if prog.TempDir != "" {
		writable = append(slices.Clip(writable), prog.TempDir)
	}
	for i, w := range writable {
		real, err := resolveExisting(fmt.Sprintf("Policy.Writable[%d]", i), w, prog)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(r.writable, real) {
			r.writable = append(r.writable, real)
		}
	}

	for _, e := range withDefaults(!p.NoDefaultHidden, DefaultHidden, "DefaultHidden()", p.Hidden, "Policy.Hidden") {
		name, h := e.name, e.path
		abs, err := expand(h, prog, name)
		if err != nil {
			return nil, err
		}
		real, err := filepath.EvalSymlinks(abs)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			if !slices.Contains(r.absent, abs) {
				r.absent = append(r.absent, abs) // nothing to hide yet: kept out should it appear
			}
			continue
		}
		if err != nil {
			return nil, pathError(name, abs, err)
		}
		if real == "/" {
			return nil, invalid(op, name, "%q resolves to /: hiding everything leaves nothing to run", h)
		}
		fi, err := os.Stat(real)
		if err != nil {
			return nil, pathError(name, real, err)
		}
		if slices.Contains(r.writable, real) {
			return nil, invalid(op, name, "%s is also a writable root", real)
		}
		if !slices.ContainsFunc(r.hidden, func(x pathEntry) bool { return x.Path == real }) {
			r.hidden = append(r.hidden, pathEntry{Path: real, Dir: fi.IsDir()})
		}
		r.pin(abs)
	}

	for i, s := range p.AllowUnixSockets {
		name := fmt.Sprintf("Policy.AllowUnixSockets[%d]", i)
		real, err := resolveExisting(name, s, prog)
		if err != nil {
			return nil, err
		}
		if fi, err := os.Stat(real); err != nil || fi.Mode().Type() != fs.ModeSocket {
			return nil, invalid(op, name, "%s is not a Unix socket", real)
		}
		r.sockets = append(r.sockets, real)
	}

	for _, e := range withDefaults(!p.NoDefaultProtected, DefaultProtected, "DefaultProtected()", p.Protected, "Policy.Protected") {
		if err := r.protect(e.name, e.path); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// resolveAllowList checks the allow-list of p and the proxy socket of prog.
func (r *resolved) resolveAllowList(p *Policy, prog Program) error {
	const op = "prepare"
	if len(p.Allow) == 0 {
		return invalid(op, "Policy.Allow", "empty: NetworkAllowList needs at least one host pattern (use NetworkOff for no network)")
	}
	for name, list := range map[string][]string{"Policy.Allow": p.Allow, "Policy.Deny": p.Deny} {
		for i, a := range list {
			n := fmt.Sprintf("%s[%d]", name, i)
			if err := checkString(n, a); err != nil {
				return err
			}
			if a == "" || strings.ContainsAny(a, " \t\n") {
				return invalid(op, n, "%q: want a host pattern such as example.com, *.example.com, 10.0.0.0/8 or example.com:443", a)
			}
		}
	}
	if prog.Proxy == "" {
		return invalid(op, "Program.Proxy", "empty: NetworkAllowList needs the Unix socket of the allow-list proxy (subprocess runs one)")
	}
	if err := checkAbs("Program.Proxy", prog.Proxy); err != nil {
		return err
	}
	if fi, err := os.Stat(prog.Proxy); err != nil {
		return pathError("Program.Proxy", prog.Proxy, err)
	} else if fi.Mode().Type() != fs.ModeSocket {
		return invalid(op, "Program.Proxy", "%s is not a Unix socket", prog.Proxy)
	}
	r.allowList, r.allow, r.deny, r.proxy = true, slices.Clone(p.Allow), slices.Clone(p.Deny), prog.Proxy
	return nil
}

// namedPath is one path of a Policy list, with the name its errors give it.
type namedPath struct{ name, path string }

// withDefaults is the defaults' list (when used) followed by the Policy's own, each entry
// named by its list and index.
func withDefaults(useDefaults bool, defaults func() []string, defaultsName string, own []string, ownName string) []namedPath {
	var out []namedPath
	if useDefaults {
		for i, p := range defaults() {
			out = append(out, namedPath{fmt.Sprintf("%s[%d]", defaultsName, i), p})
		}
	}
	for i, p := range own {
		out = append(out, namedPath{fmt.Sprintf("%s[%d]", ownName, i), p})
	}
	return out
}

// resolveExisting expands the Policy path p (see expand) and resolves its symbolic links; it
// must exist.
func resolveExisting(name, p string, prog Program) (string, error) {
	abs, err := expand(p, prog, name)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", pathError(name, abs, err)
	}
	return real, nil
}

// inWritable reports whether p is a writable root or lies beneath one.
func (r *resolved) inWritable(p string) bool { return beneathAny(p, r.writable) }

// beneathAny reports whether p is one of roots or lies beneath one.
func beneathAny(p string, roots []string) bool {
	return slices.ContainsFunc(roots, func(root string) bool { return p == root || within(p, root) })
}

// protect adds the protected path p: in each writable root when relative, else as it is. A
// repository's missing .git/hooks is made (empty, as git init makes it), so that no hook can
// be planted there either.
func (r *resolved) protect(name, p string) error {
	if p == "" || strings.HasPrefix(p, "~") {
		return invalid("prepare", name, "%q: want a path relative to each writable root, or an absolute one", p)
	}
	if err := checkString(name, p); err != nil {
		return err
	}
	var cands []string
	if filepath.IsAbs(p) {
		cands = []string{filepath.Clean(p)}
	} else {
		for _, w := range r.writable {
			cands = append(cands, filepath.Join(w, p))
		}
	}
	for _, c := range cands {
		if filepath.Base(c) == "hooks" && filepath.Base(filepath.Dir(c)) == ".git" && isRealDir(filepath.Dir(c)) {
			if err := os.Mkdir(c, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
				return pathError(name, c, err)
			}
		}
		real, err := filepath.EvalSymlinks(c)
		if err != nil {
			continue // missing: nothing to protect
		}
		fi, err := os.Stat(real)
		if err != nil || !slices.ContainsFunc(r.writable, func(w string) bool { return within(real, w) }) {
			continue // outside every writable root: read-only already
		}
		if !slices.ContainsFunc(r.protected, func(x pathEntry) bool { return x.Path == real }) {
			r.protected = append(r.protected, pathEntry{Path: real, Dir: fi.IsDir()})
		}
		r.pin(c)
	}
	return nil
}

// maxLinks is how many symbolic links pin follows on one path, as the kernel's MAXSYMLINKS.
const maxLinks = 40

// pin records what keeps the path p where it is while the program runs: each directory beneath
// a writable root that p passes through before its last element, and each symbolic link on the
// way (p itself included) that lies beneath one. Bound onto themselves they are mount points,
// which rename(2), unlink(2) and rmdir(2) refuse with EBUSY. So the program can neither move a
// hidden or protected path away (renaming .git, say, and making a new .git/hooks) nor re-point a
// link to a hidden file (so that the next run would hide another file and leave the secret
// readable). The writable roots themselves are mount points already.
func (r *resolved) pin(p string) {
	rest := strings.Split(p, "/")
	cur := "/"
	for links := 0; len(rest) > 0; {
		next := filepath.Join(cur, rest[0]) // cur has no link in it: ".." is lexical
		rest = rest[1:]
		if next == cur {
			continue
		}
		fi, err := os.Lstat(next)
		if err != nil {
			return
		}
		inRoot := slices.ContainsFunc(r.writable, func(w string) bool { return within(next, w) })
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(next)
			if err != nil || links == maxLinks {
				return
			}
			links++
			if inRoot {
				r.addPin(pathEntry{Path: next, Link: true})
			}
			if filepath.IsAbs(target) {
				cur = "/"
			}
			rest = append(strings.Split(target, "/"), rest...)
			continue
		}
		if inRoot && fi.IsDir() && len(rest) > 0 {
			r.addPin(pathEntry{Path: next, Dir: true})
		}
		cur = next
	}
}

func (r *resolved) addPin(e pathEntry) {
	if !slices.Contains(r.pinned, e) {
		r.pinned = append(r.pinned, e)
	}
}

// checkProgram checks the fields of prog. needTemp: the default writable roots need TempDir.
func checkProgram(prog Program, needTemp bool) error {
	const op = "prepare"
	if err := checkAbs("Program.Path", prog.Path); err != nil {
		return err
	}
	fi, err := os.Stat(prog.Path)
	if err != nil {
		return pathError("Program.Path", prog.Path, err)
	}
	if fi.IsDir() {
		return invalid(op, "Program.Path", "%s is a directory", prog.Path)
	}
	if len(prog.Args) == 0 {
		return invalid(op, "Program.Args", "empty: Args[0] is argv[0] and must be there")
	}
	for i, a := range prog.Args {
		if err := checkString(fmt.Sprintf("Program.Args[%d]", i), a); err != nil {
			return err
		}
	}
	for i, e := range prog.Env {
		name := fmt.Sprintf("Program.Env[%d]", i)
		if err := checkString(name, e); err != nil {
			return err
		}
		if k, _, ok := strings.Cut(e, "="); !ok || k == "" {
			return invalid(op, name, "%q is not NAME=VALUE", e)
		}
	}
	for i, p := range prog.Readable {
		if err := checkAbs(fmt.Sprintf("Program.Readable[%d]", i), p); err != nil {
			return err
		}
	}
	if err := checkDir("Program.Dir", prog.Dir); err != nil {
		return err
	}
	if prog.TempDir == "" {
		if needTemp {
			return invalid(op, "Program.TempDir", "empty: the default writable roots (Policy.Writable nil) are Program.Dir and Program.TempDir")
		}
	} else if err := checkDir("Program.TempDir", prog.TempDir); err != nil {
		return err
	}
	if prog.Home != "" {
		if err := checkAbs("Program.Home", prog.Home); err != nil {
			return err
		}
	}
	return nil
}

func checkAbs(name, p string) error {
	if p == "" {
		return invalid("prepare", name, "empty")
	}
	if err := checkString(name, p); err != nil {
		return err
	}
	if !filepath.IsAbs(p) {
		return invalid("prepare", name, "%q is not absolute", p)
	}
	return nil
}

func checkDir(name, p string) error {
	if err := checkAbs(name, p); err != nil {
		return err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return pathError(name, p, err)
	}
	if !fi.IsDir() {
		return invalid("prepare", name, "%s is not a directory", p)
	}
	return nil
}

func checkString(name, s string) error {
	if strings.IndexByte(s, 0) >= 0 {
		return invalid("prepare", name, "contains a NUL byte")
	}
	if len(s) >= maxArgLen {
		return invalid("prepare", name, "%d bytes: Linux takes at most %d in one argument or environment string", len(s), maxArgLen-1)
	}
	return nil
}

// expand makes a Policy path absolute: "~" and "~/..." against prog.Home, relative ones
// against prog.Dir.
func expand(p string, prog Program, name string) (string, error) {
	if p == "" {
		return "", invalid("prepare", name, "empty path")
	}
	if err := checkString(name, p); err != nil {
		return "", err
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		if prog.Home == "" {
			return "", invalid("prepare", name, "%q needs Program.Home, which is empty", p)
		}
		return filepath.Join(prog.Home, p[1:]), nil
	}
	if strings.HasPrefix(p, "~") {
		return "", invalid("prepare", name, "%q: only ~ and ~/ are expanded (not ~user)", p)
	}
	if !filepath.IsAbs(p) {
		return filepath.Join(prog.Dir, p), nil
	}
	return filepath.Clean(p), nil
}

// pathError is the error of a path that could not be resolved.
func pathError(name, p string, err error) error {
	kind := ErrInvalid
	if errors.Is(err, fs.ErrNotExist) {
		kind = ErrNotFound
	}
	return &Error{Op: "prepare", Name: name, Kind: kind, Err: err}
}

// checkLimits refuses a limit that would not lower this process's own hard limit (the
// program inherits it, and only a privileged process could raise it).
func checkLimits(l Limits) error {
	for _, c := range []struct {
		name     string
		resource int
		v        uint64
	}{
		{"Limits.CPUSeconds", unix.RLIMIT_CPU, l.CPUSeconds},
		{"Limits.FileSizeBytes", unix.RLIMIT_FSIZE, l.FileSizeBytes},
		{"Limits.OpenFiles", unix.RLIMIT_NOFILE, l.OpenFiles},
		{"Limits.Processes", unix.RLIMIT_NPROC, l.Processes},
		{"Limits.AddressSpaceBytes", unix.RLIMIT_AS, l.AddressSpaceBytes},
	} {
		if c.v == 0 {
			continue
		}
		var cur unix.Rlimit
		if err := unix.Getrlimit(c.resource, &cur); err != nil {
			return &Error{Op: "prepare", Name: c.name, Kind: ErrSystem, Err: fmt.Errorf("getrlimit: %w", err)}
		}
		max := cur.Max
		if c.resource == unix.RLIMIT_CPU && max != unix.RLIM_INFINITY {
			max-- // the hard limit is set one second above the soft one
		}
		if c.v == unix.RLIM_INFINITY || c.v > max || (max == unix.RLIM_INFINITY && c.v >= max-1) {
			return &Error{Op: "prepare", Name: c.name, Kind: ErrInvalid,
				Err:  fmt.Errorf("%d is not below this process's hard limit (%s)", c.v, rlimitString(cur.Max)),
				Hint: "a limit can only lower the hard limit; use 0 for no limit"}
		}
	}
	return nil
}

func rlimitString(v uint64) string {
	if v == unix.RLIM_INFINITY {
		return "unlimited"
	}
	return fmt.Sprint(v)
}
