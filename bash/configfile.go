package bash

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/subkit/subkit/sandbox"
)

// A config file is one mapping of the keys documented on Config, for example
//
//	cwd: /path/to/workspace
//	timeoutMs: 120000
//	maxTimeoutMs: 600000
//	maxOutputBytes: 64000
//	maxSpillBytes: 67108864
//	graceMs: 3000
//
// Rules, the same for JSON and YAML: an unknown key, a key given twice, a value of the wrong
// type, a fraction, a negative number or a zero is an error naming the key (omit a key, or
// give it null, for its default); numbers are whole milliseconds or bytes.

// pair is one key of a config mapping, in file order.
type pair struct {
	key   string
	line  int
	value any // nil, bool, string, a number (json.Number, int, uint64, float64) or []any
}

// ParseConfigJSON reads a Config from a JSON object. Errors are *ConfigError wrapping
// ErrInvalid.
func ParseConfigJSON(data []byte) (Config, error) {
	pairs, err := jsonPairs(data)
	if err != nil {
		return Config{}, err
	}
	return fromPairs(pairs)
}

// ParseConfigYAML reads a Config from a YAML mapping. An empty document is the zero Config.
// Errors are *ConfigError wrapping ErrInvalid.
func ParseConfigYAML(data []byte) (Config, error) {
	pairs, err := yamlPairs(data)
	if err != nil {
		return Config{}, err
	}
	return fromPairs(pairs)
}

// LoadConfig reads a Config from a file: JSON when its name ends in ".json", YAML otherwise
// (YAML 1.2 also reads most JSON). A relative "cwd" or "spillDir" in the file is taken
// against the file's directory.
func LoadConfig(path string) (Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Config{}, &Error{Op: "load config", Name: path, Err: err}
	}
	var c Config
	if strings.EqualFold(filepath.Ext(path), ".json") {
		c, err = ParseConfigJSON(data)
	} else {
		c, err = ParseConfigYAML(data)
	}
	if err != nil {
		return Config{}, &Error{Op: "load config", Name: path, Err: err}
	}
	base := filepath.Dir(path)
	for _, p := range []*string{&c.Cwd, &c.SpillDir} {
		if *p != "" && !filepath.IsAbs(*p) {
			*p = filepath.Join(base, *p)
		}
	}
	return c, nil
}

func fromPairs(pairs []pair) (Config, error) {
	keys := configKeys()
	var c Config
	seen := map[string]int{}
	for _, p := range pairs {
		if line, dup := seen[p.key]; dup {
			return Config{}, &ConfigError{Key: p.key, Line: p.line,
				Err: fmt.Errorf("given twice (first at line %d)", line)}
		}
		seen[p.key] = p.line
		i := -1
		for j, k := range keys {
			if k.key == p.key {
				i = j
			}
		}
		if i < 0 {
			return Config{}, &ConfigError{Key: p.key, Line: p.line, Err: unknownKey(p.key, keys)}
		}
		if p.value == nil {
			continue // null: the default
		}
		if err := keys[i].set(&c, p.value); err != nil {
			return Config{}, &ConfigError{Key: p.key, Field: keys[i].field, Line: p.line, Err: err}
		}
	}
	if err := c.Validate(); err != nil {
		var ce *ConfigError
		if errors.As(err, &ce) {
			ce.Line = seen[ce.Key]
		}
		return Config{}, err
	}
	return c, nil
}

func unknownKey(key string, keys []configKey) error {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = k.key
		if strings.EqualFold(k.key, key) {
			return fmt.Errorf("unknown key; did you mean %s? (keys are case-sensitive)", k.key)
		}
	}
	return fmt.Errorf("unknown key; the keys are %s", strings.Join(names, ", "))
}

func jsonPairs(data []byte) ([]pair, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	lineAt := func() int { return 1 + bytes.Count(data[:dec.InputOffset()], []byte("\n")) }
	syntax := func(err error) error {
		return &ConfigError{Line: lineAt(), Err: fmt.Errorf("not a JSON object: %w", err)}
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, syntax(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, syntax(fmt.Errorf("starts with %v", tok))
	}
	var pairs []pair
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, syntax(err)
		}
		key, _ := tok.(string)
		line := lineAt()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, &ConfigError{Key: key, Line: line, Err: err}
		}
		pairs = append(pairs, pair{key: key, line: line, value: v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, syntax(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, syntax(errors.New("data after the object"))
	}
	return pairs, nil
}

func yamlPairs(data []byte) ([]pair, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &ConfigError{Err: fmt.Errorf("not a YAML mapping: %w", err)}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil, nil // an empty document
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil, nil
	}
	if root.Kind == yaml.SequenceNode {
		var err error
		if root, err = toolEntry(root); err != nil {
			return nil, err
		}
	}
	if root.Kind != yaml.MappingNode {
		return nil, &ConfigError{Line: root.Line, Err: errors.New("not a YAML mapping of keys to values")}
	}
	var pairs []pair
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, vn := root.Content[i], root.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			return nil, &ConfigError{Line: k.Line, Err: errors.New("a key must be a plain name")}
		}
		var v any
		if err := vn.Decode(&v); err != nil {
			return nil, &ConfigError{Key: k.Value, Line: k.Line, Err: err}
		}
		pairs = append(pairs, pair{key: k.Value, line: k.Line, value: v})
	}
	return pairs, nil
}

// toolEntry finds the executor's keys in the reference's list of tool entries
// (`- id: bash` / `name:` / `config:`): the config mapping of the entry whose id is bash.
func toolEntry(list *yaml.Node) (*yaml.Node, error) {
	for _, item := range list.Content {
		if item.Kind != yaml.MappingNode {
			continue
		}
		var id, config *yaml.Node
		for i := 0; i+1 < len(item.Content); i += 2 {
			switch item.Content[i].Value {
			case "id":
				id = item.Content[i+1]
			case "config":
				config = item.Content[i+1]
			}
		}
		if id == nil || id.Value != "bash" {
			continue
		}
		if config == nil {
			return &yaml.Node{Kind: yaml.MappingNode}, nil // the defaults
		}
		if config.Kind != yaml.MappingNode {
			return nil, &ConfigError{Key: "config", Line: config.Line, Err: errors.New("the config: of the `- id: bash` entry must be a mapping of keys to values")}
		}
		return config, nil
	}
	return nil, &ConfigError{Line: list.Line, Err: errors.New("a list with no `- id: bash` entry: give the executor's keys as one mapping, or under config: of a `- id: bash` entry")}
}

// toPositive converts a file number to a positive whole number.
func toPositive(v any) (int64, error) {
	var n int64
	switch x := v.(type) {
	case json.Number:
		i, err := x.Int64()
		if err != nil {
			f, ferr := x.Float64()
			if ferr != nil {
				return 0, fmt.Errorf("%s is not a number that fits", x)
			}
			return toPositive(f)
		}
		n = i
	case int:
		n = int64(x)
	case int64:
		n = x
	case uint64:
		if x > math.MaxInt64 {
			return 0, fmt.Errorf("%d is too large", x)
		}
		n = int64(x)
	case float64:
		if x != math.Trunc(x) || math.IsInf(x, 0) {
			return 0, fmt.Errorf("%v is not a whole number", x)
		}
		if x >= math.MaxInt64 || x <= math.MinInt64 {
			return 0, fmt.Errorf("%v is too large", x)
		}
		n = int64(x)
	default:
		return 0, fmt.Errorf("want a whole number, got %s", describe(v))
	}
	switch {
	case n < 0:
		return 0, fmt.Errorf("%d is negative", n)
	case n == 0:
		return 0, errors.New("0 is not allowed; omit the key (or set it to null) for the default")
	}
	return n, nil
}

// toMillis converts a file number of milliseconds to a Duration.
func toMillis(v any) (time.Duration, error) {
	n, err := toPositive(v)
	if err != nil {
		return 0, err
	}
	if n > math.MaxInt64/int64(time.Millisecond) {
		return 0, fmt.Errorf("%d ms is too large", n)
	}
	return time.Duration(n) * time.Millisecond, nil
}

func toString(v any) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("want a string, got %s", describe(v))
	}
	return s, nil
}

func toBool(v any) (bool, error) {
	b, ok := v.(bool)
	if !ok {
		return false, fmt.Errorf("want true or false, got %s", describe(v))
	}
	return b, nil
}

// toPolicy reads the sandbox block: true (the default policy), false (none), or a mapping.
func toPolicy(v any) (*sandbox.Policy, error) {
	switch x := v.(type) {
	case bool:
		if !x {
			return nil, nil
		}
		return &sandbox.Policy{}, nil
	case map[string]any:
		p := &sandbox.Policy{}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys) // the first bad key is always the same one
		for _, k := range keys {
			if err := setPolicyKey(p, k, x[k]); err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
		}
		return p, nil
	}
	return nil, fmt.Errorf("want true, false or a mapping (%s), got %s", policyKeys, describe(v))
}

// policyKeys are the keys of a sandbox mapping.
const policyKeys = "writable, hidden, noDefaultHidden, allowUnixSockets, protected, noDefaultProtected, network, allow, deny, backend, limits"

func setPolicyKey(p *sandbox.Policy, key string, v any) (err error) {
	switch key {
	case "writable":
		p.Writable, err = toStrings(v)
	case "hidden":
		p.Hidden, err = toStrings(v)
	case "noDefaultHidden":
		p.NoDefaultHidden, err = toBool(v)
	case "allowUnixSockets":
		p.AllowUnixSockets, err = toStrings(v)
	case "allow":
		p.Allow, err = toStrings(v)
	case "deny":
		p.Deny, err = toStrings(v)
	case "protected":
		p.Protected, err = toStrings(v)
	case "noDefaultProtected":
		p.NoDefaultProtected, err = toBool(v)
	case "network":
		var s string
		if s, err = toString(v); err == nil {
			switch s {
			case "on":
				p.Network = sandbox.NetworkOn
			case "off":
				p.Network = sandbox.NetworkOff
			case "allow":
				p.Network = sandbox.NetworkAllowList
			default:
				err = fmt.Errorf("want \"on\", \"off\" or \"allow\", got %q", s)
			}
		}
	case "backend":
		var s string
		s, err = toString(v)
		p.Backend = sandbox.Backend(s)
	case "limits":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("want a mapping (cpuSeconds, fileSizeBytes, openFiles, processes, addressSpaceBytes), got %s", describe(v))
		}
		fields := map[string]*uint64{"cpuSeconds": &p.Limits.CPUSeconds, "fileSizeBytes": &p.Limits.FileSizeBytes,
			"openFiles": &p.Limits.OpenFiles, "processes": &p.Limits.Processes, "addressSpaceBytes": &p.Limits.AddressSpaceBytes}
		for k, x := range m {
			f, ok := fields[k]
			if !ok {
				return fmt.Errorf("unknown limit %q (cpuSeconds, fileSizeBytes, openFiles, processes, addressSpaceBytes)", k)
			}
			n, err := toPositive(x)
			if err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
			*f = uint64(n)
		}
	default:
		err = fmt.Errorf("unknown key (%s)", policyKeys)
	}
	return err
}

func toStrings(v any) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("want a list of strings, got %s", describe(v))
	}
	out := make([]string, len(list))
	for i, x := range list {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("entry %d: want a string, got %s", i, describe(x))
		}
		out[i] = s
	}
	return out, nil
}

func describe(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("the string %q", x)
	case bool:
		return fmt.Sprintf("the boolean %v", x)
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	case json.Number, int, int64, uint64, float64:
		return fmt.Sprintf("the number %v", x)
	}
	return fmt.Sprintf("%T", v)
}
