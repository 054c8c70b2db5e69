package lsp

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
)

// glob is a compiled LSP glob pattern: "*" matches within one path segment, "**" any number
// of segments, "?" one character, "{a,b}" either alternative, "[a-z]" a class.
type glob struct {
	re *regexp.Regexp
}

// compileGlob translates an LSP glob pattern to a regular expression anchored at both ends.
func compileGlob(pattern string) (glob, error) {
	var b strings.Builder
	b.WriteString("^")
	depth := 0 // inside {...}
	for i := 0; i < len(pattern); i++ {
		ch := pattern[i]
		switch ch {
		case '*':
			if i+1 < len(pattern) && pattern[i+1] == '*' {
				i++
				if i+1 < len(pattern) && pattern[i+1] == '/' { // "**/": any leading directories, or none
					i++
					b.WriteString("(?:.*/)?")
				} else {
					b.WriteString(".*")
				}
				continue
			}
			b.WriteString("[^/]*")
		case '?':
			b.WriteString("[^/]")
		case '{':
			depth++
			b.WriteString("(?:")
		case '}':
			if depth == 0 {
				b.WriteString(`\}`)
				continue
			}
			depth--
			b.WriteString(")")
		case ',':
			if depth > 0 {
				b.WriteString("|")
			} else {
				b.WriteString(",")
			}
		case '[':
			j := strings.IndexByte(pattern[i+1:], ']')
			if j < 0 {
				b.WriteString(`\[`)
				continue
			}
			class := pattern[i+1 : i+1+j]
			if strings.HasPrefix(class, "!") {
				class = "^" + class[1:]
			}
			b.WriteString("[" + strings.ReplaceAll(class, `\`, `\\`) + "]")
			i += j + 1
		default:
			b.WriteString(regexp.QuoteMeta(string(ch)))
		}
	}
	if depth != 0 {
		return glob{}, fmt.Errorf("glob %q: unclosed {", pattern)
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	if err != nil {
		return glob{}, fmt.Errorf("glob %q: %w", pattern, err)
	}
	return glob{re: re}, nil
}

func (g glob) match(p string) bool { return g.re != nil && g.re.MatchString(p) }

// fileWatcher is one watcher a server registered for workspace/didChangeWatchedFiles.
type fileWatcher struct {
	base string // absolute slash path the pattern is relative to; "" for a pattern on the whole path
	g    glob
	kind int // WatchKind bits: 1 create, 2 change, 4 delete
}

// parseWatchers reads the watchers of a workspace/didChangeWatchedFiles registration. A
// watcher that cannot be read is skipped (and reported in the error).
func parseWatchers(opts json.RawMessage) ([]fileWatcher, error) {
	var o struct {
		Watchers []struct {
			GlobPattern json.RawMessage `json:"globPattern"`
			Kind        *int            `json:"kind"`
		} `json:"watchers"`
	}
	if err := json.Unmarshal(opts, &o); err != nil {
		return nil, newError("read registration", "workspace/didChangeWatchedFiles", nil, err)
	}
	var out []fileWatcher
	var errs []string
	for _, w := range o.Watchers {
		fw := fileWatcher{kind: 7}
		if w.Kind != nil {
			fw.kind = *w.Kind
		}
		var pattern string
		if json.Unmarshal(w.GlobPattern, &pattern) != nil {
			var rel struct {
				BaseURI json.RawMessage `json:"baseUri"`
				Pattern string          `json:"pattern"`
			}
			if err := json.Unmarshal(w.GlobPattern, &rel); err != nil {
				errs = append(errs, err.Error())
				continue
			}
			var base string
			if json.Unmarshal(rel.BaseURI, &base) != nil {
				var folder WorkspaceFolder
				json.Unmarshal(rel.BaseURI, &folder)
				base = folder.URI
			}
			p, err := URIToPath(base)
			if err != nil {
				errs = append(errs, err.Error())
				continue
			}
			fw.base = strings.TrimSuffix(slashPath(p), "/")
			pattern = rel.Pattern
		}
		g, err := compileGlob(pattern)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		fw.g = g
		out = append(out, fw)
	}
	if len(errs) > 0 {
		return out, newError("read registration", "workspace/didChangeWatchedFiles", nil, errors.New(strings.Join(errs, "; ")))
	}
	return out, nil
}

// slashPath is p with forward slashes, as globs are written.
func slashPath(p string) string { return strings.ReplaceAll(p, `\`, "/") }

// matches says whether the watcher wants an event of type t for the absolute path p.
func (w fileWatcher) matches(p string, t FileChangeType) bool {
	bit := map[FileChangeType]int{FileCreated: 1, FileChanged: 2, FileDeleted: 4}[t]
	if w.kind&bit == 0 {
		return false
	}
	p = slashPath(p)
	if w.base != "" {
		if !strings.HasPrefix(p, w.base+"/") {
			return false
		}
		return w.g.match(p[len(w.base)+1:])
	}
	// A pattern on the whole path: "**/*.go" matches anywhere, "/abs/**" from the root; a
	// relative pattern without "**" matches the path's last segments.
	if w.g.match(p) || w.g.match(strings.TrimPrefix(p, "/")) {
		return true
	}
	return w.g.match(path.Base(p))
}
