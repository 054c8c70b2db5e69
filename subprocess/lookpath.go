package subprocess

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// pathRules are the platform's rules for finding an executable.
type pathRules struct {
	listSep  string   // PATH separator
	exts     []string // Windows: PATHEXT extensions, lower case with the dot; nil elsewhere
	needMode bool     // POSIX: a file must have an execute bit
}

// defaultPathExt is used on Windows when PATHEXT is unset or empty.
const defaultPathExt = ".COM;.EXE;.BAT;.CMD"

// parsePathExt turns a PATHEXT value into lower-case extensions with a leading dot.
func parsePathExt(v string) []string {
	if strings.TrimSpace(v) == "" {
		v = defaultPathExt
	}
	var exts []string
	for _, e := range strings.Split(v, ";") {
		e = strings.ToLower(strings.TrimSpace(e))
		if e == "" {
			continue
		}
		if e[0] != '.' {
			e = "." + e
		}
		exts = append(exts, e)
	}
	return exts
}

// resolveExecutable finds name: a path (absolute, or relative with a separator, taken against
// cwd) is checked as it is; a bare name is searched in pathList. Relative and empty entries of
// pathList are skipped: the current directory is never searched implicitly.
func resolveExecutable(name, cwd, pathList string, r pathRules) (string, error) {
	if name == "" {
		return "", &Error{Op: "resolve", Kind: ErrInvalid, Err: errors.New("empty program name")}
	}
	if strings.ContainsRune(name, 0) {
		return "", &Error{Op: "resolve", Name: name, Kind: ErrInvalid, Err: errors.New("name contains a NUL byte")}
	}
	if strings.ContainsAny(name, `/`+string(filepath.Separator)) {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		found, err := r.tryFile(p)
		if err != nil {
			return "", &Error{Op: "resolve", Name: name, Kind: kindOf(err), Err: err}
		}
		return found, nil
	}
	var denied error
	var searched []string
	for _, dir := range strings.Split(pathList, r.listSep) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		searched = append(searched, dir)
		found, err := r.tryFile(filepath.Join(dir, name))
		if err == nil {
			return found, nil
		}
		if denied == nil && errors.Is(err, ErrPermission) {
			denied = err
		}
	}
	if denied != nil {
		return "", &Error{Op: "resolve", Name: name, Kind: ErrPermission, Err: denied,
			Hint: "a file of that name exists on PATH but is not executable"}
	}
	return "", &Error{Op: "resolve", Name: name, Kind: ErrNotFound,
		Err:  fmt.Errorf("searched PATH=%s", strings.Join(searched, r.listSep)),
		Hint: "install it, pass an absolute path, or set PATH in the spec's Env"}
}

// tryFile returns the executable at p, trying PATHEXT extensions where the platform has them.
// There, a file whose name has no extension at all is not executable: os/exec on Windows
// refuses to start one (it looks for the name with a PATHEXT extension instead).
func (r pathRules) tryFile(p string) (string, error) {
	if len(r.exts) > 0 {
		ext := strings.ToLower(filepath.Ext(p))
		for _, e := range r.exts {
			if ext == e {
				return p, r.check(p)
			}
		}
		for _, e := range r.exts {
			if r.check(p+e) == nil {
				return p + e, nil
			}
		}
		if ext == "" {
			if err := r.check(p); err != nil {
				return p, err
			}
			return p, kindError{ErrPermission, p + " has no extension: Windows programs are named with one (.exe, or another that PATHEXT lists)"}
		}
	}
	return p, r.check(p)
}

// check reports whether p is a file that can be executed, as an error of kind ErrNotFound or
// ErrPermission.
func (r pathRules) check(p string) error {
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return kindError{ErrNotFound, p + " does not exist"}
	case err != nil:
		return kindError{ErrPermission, err.Error()}
	case fi.IsDir():
		return kindError{ErrPermission, p + " is a directory"}
	case r.needMode && fi.Mode().Perm()&0o111 == 0:
		return kindError{ErrPermission, p + " has no execute bit"}
	}
	return nil
}

func kindOf(err error) error {
	for _, k := range []error{ErrNotFound, ErrPermission, ErrInvalid, ErrClosed, ErrUnsupported} {
		if errors.Is(err, k) {
			return k
		}
	}
	return nil
}
