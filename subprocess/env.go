package subprocess

import (
	"fmt"
	"slices"
	"strings"
)

// credentialWords are the name fragments that mark a variable as a credential: keys, secrets,
// tokens, passwords (PASS covers PASSWORD and PASSWD, PWD the MYSQL_PWD kind), credentials,
// authentication (SSH_AUTH_SOCK, the ssh agent, included), cookies, sessions and DSNs (URLs
// with a password: SENTRY_DSN, DATABASE_DSN). Matching is case-insensitive and by substring,
// so it has false positives (KEYBOARD_LAYOUT, XDG_SESSION_TYPE): list those in
// Config.AllowEnv.
var credentialWords = []string{"KEY", "SECRET", "TOKEN", "PASS", "PWD", "CREDENTIAL", "AUTH", "COOKIE", "SESSION", "DSN"}

// notCredential are the names that contain a credential word and are none: the shell's
// working directories.
var notCredential = []string{"PWD", "OLDPWD"}

// benignParts are whole parts of a name (between underscores) that contain a credential word
// and say nothing secret: git's GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL.
var benignParts = []string{"AUTHOR"}

// cutEnv splits NAME=VALUE. A leading '=' belongs to the name: Windows keeps per-drive
// working directories in entries such as "=C:=C:\dir".
func cutEnv(kv string) (name, value string, ok bool) {
	if i := strings.IndexByte(kv[min(1, len(kv)):], '='); i >= 0 {
		i += min(1, len(kv))
		return kv[:i], kv[i+1:], true
	}
	return kv, "", false
}

// envRules are the platform's rules for variable names.
type envRules struct {
	foldCase bool // Windows: names are case-insensitive
}

func (r envRules) key(name string) string {
	if r.foldCase {
		return strings.ToUpper(name)
	}
	return name
}

// looksSecret reports whether the variable name=value looks like it holds a credential: its
// name carries a credential word, or its value a URL with a password.
func looksSecret(name, value string) bool {
	up := strings.ToUpper(name)
	if !slices.Contains(notCredential, up) {
		for part := range strings.SplitSeq(up, "_") {
			if slices.Contains(benignParts, part) {
				continue
			}
			for _, w := range credentialWords {
				if strings.Contains(part, w) {
					return true
				}
			}
		}
	}
	return hasURLPassword(value)
}

// hasURLPassword reports whether v holds a URL whose user info has a password
// (scheme://user:password@host, or scheme://:password@host), as proxy settings and database
// URLs do: HTTPS_PROXY=http://u:p@proxy:3128, DATABASE_URL=postgres://u:p@db/app. Every URL
// in v counts (lists of them included); a URL's authority ends at the first '/', '?' or '#'
// (RFC 3986) or at white space.
func hasURLPassword(v string) bool {
	for {
		i := strings.Index(v, "://")
		if i < 0 {
			return false
		}
		v = v[i+len("://"):]
		authority := v
		if end := strings.IndexAny(v, "/?# \t\r\n"); end >= 0 {
			authority = v[:end]
		}
		if at := strings.LastIndexByte(authority, '@'); at >= 0 {
			if _, password, ok := strings.Cut(authority[:at], ":"); ok && password != "" {
				return true
			}
		}
	}
}

// scrubEnv returns env without credential-like variables (looksSecret) and without names
// carrying the managed prefix, except names in allow. Malformed entries (no '=') are dropped.
// Later duplicates win, as they would in the child.
func scrubEnv(env []string, managedPrefix string, allow []string, r envRules) []string {
	allowed := make(map[string]bool, len(allow))
	for _, a := range allow {
		allowed[r.key(a)] = true
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, value, ok := cutEnv(kv)
		if !ok || name == "" {
			continue
		}
		if !allowed[r.key(name)] {
			if looksSecret(name, value) || hasPrefix(name, managedPrefix, r) {
				continue
			}
		}
		out = append(out, kv)
	}
	return mergeEnv(nil, out, r)
}

func hasPrefix(name, prefix string, r envRules) bool {
	if prefix == "" {
		return false
	}
	if r.foldCase {
		return len(name) >= len(prefix) && strings.EqualFold(name[:len(prefix)], prefix)
	}
	return strings.HasPrefix(name, prefix)
}

// mergeEnv returns base with every entry of extra set, later entries winning; order is kept
// (a replaced name stays where it first appeared).
func mergeEnv(base, extra []string, r envRules) []string {
	if len(extra) == 0 {
		return append(make([]string, 0, len(base)+2), base...) // room for the backend's cookies
	}
	out := make([]string, 0, len(base)+len(extra))
	at := make(map[string]int, len(base)+len(extra))
	for _, list := range [][]string{base, extra} {
		for _, kv := range list {
			name, _, _ := cutEnv(kv)
			k := r.key(name)
			if i, ok := at[k]; ok {
				out[i] = kv
				continue
			}
			at[k] = len(out)
			out = append(out, kv)
		}
	}
	return out
}

// checkEnv validates explicit NAME=VALUE entries.
func checkEnv(env []string) error {
	for i, kv := range env {
		name, _, ok := cutEnv(kv)
		switch {
		case !ok:
			return invalid("spawn", "Env", fmt.Sprintf("entry %d %q is not NAME=VALUE", i, kv))
		case name == "":
			return invalid("spawn", "Env", fmt.Sprintf("entry %d %q has an empty name", i, kv))
		case strings.ContainsRune(kv, 0):
			return invalid("spawn", "Env", fmt.Sprintf("entry %d (%s) contains a NUL byte", i, name))
		}
	}
	return nil
}

// lookupEnv returns the value of name in env under rules r.
func lookupEnv(env []string, name string, r envRules) (string, bool) {
	val, found := "", false
	for _, kv := range env {
		n, v, _ := cutEnv(kv)
		if r.key(n) == r.key(name) {
			val, found = v, true
		}
	}
	return val, found
}
