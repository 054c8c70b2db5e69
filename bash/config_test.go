package bash_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/bash"
)

func TestConfigDefaults(t *testing.T) {
	e, _ := newExecutor(t, bash.Config{})
	c := e.Config()
	host, err := os.Getwd()
	require.NoError(t, err)
	assert.Equal(t, host, c.Cwd)
	assert.Equal(t, 120000*time.Millisecond, c.Timeout)
	assert.Equal(t, 600000*time.Millisecond, c.MaxTimeout)
	assert.Equal(t, 64000, c.MaxOutputBytes)
	assert.EqualValues(t, 67108864, c.MaxSpillBytes)
	assert.Equal(t, 3000*time.Millisecond, c.Grace)
	assert.Equal(t, 250*time.Millisecond, c.DrainGrace)
	assert.Equal(t, 64, c.MaxBackground)
	assert.Equal(t, 24*time.Hour, c.SpillMaxAge)
	assert.EqualValues(t, 1<<30, c.SpillMaxTotalBytes)
	assert.Equal(t, "DSH_", c.ManagedPrefix)
	assert.True(t, filepath.IsAbs(c.SpillDir))

	// An unset timeout never exceeds a lowered cap.
	e, _ = newExecutor(t, bash.Config{MaxTimeout: time.Minute})
	assert.Equal(t, time.Minute, e.Config().Timeout)

	// A relative cwd is taken against the host's.
	e, _ = newExecutor(t, bash.Config{Cwd: "."})
	assert.Equal(t, host, e.Config().Cwd)
}

// configErr asserts err is a *ConfigError wrapping ErrInvalid for key, and returns it.
func configErr(t *testing.T, err error, key string) *bash.ConfigError {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, bash.ErrInvalid)
	var ce *bash.ConfigError
	require.True(t, errors.As(err, &ce), "%T: %v", err, err)
	assert.Equal(t, key, ce.Key, "%v", err)
	assert.Contains(t, err.Error(), key)
	return ce
}

func TestConfigInvalid(t *testing.T) {
	cases := []struct {
		cfg bash.Config
		key string
	}{
		{bash.Config{Timeout: -1}, "timeoutMs"},
		{bash.Config{MaxTimeout: -time.Second}, "maxTimeoutMs"},
		{bash.Config{MaxOutputBytes: -1}, "maxOutputBytes"},
		{bash.Config{MaxSpillBytes: -1}, "maxSpillBytes"},
		{bash.Config{Grace: -1}, "graceMs"},
		{bash.Config{DrainGrace: -1}, "drainMs"},
		{bash.Config{MaxBackground: -1}, "maxBackground"},
		{bash.Config{SpillMaxAge: -1}, "spillMaxAgeMs"},
		{bash.Config{SpillMaxTotalBytes: -1}, "spillMaxTotalBytes"},
		{bash.Config{Timeout: 601 * time.Second}, "timeoutMs"},
		{bash.Config{Timeout: 2 * time.Second, MaxTimeout: time.Second}, "timeoutMs"},
		{bash.Config{ManagedPrefix: "A=B"}, "managedPrefix"},
		{bash.Config{AllowEnv: []string{"OK", ""}}, "allowEnv[1]"},
	}
	for _, c := range cases {
		t.Run(c.key, func(t *testing.T) {
			configErr(t, c.cfg.Validate(), c.key)
			_, err := bash.New(c.cfg)
			configErr(t, err, c.key)
		})
	}
	t.Run("cwd", func(t *testing.T) {
		_, err := bash.New(bash.Config{Cwd: "/no/such/dir", SpillDir: t.TempDir()})
		configErr(t, err, "cwd")
		assert.ErrorIs(t, err, fs.ErrNotExist)
		f := filepath.Join(t.TempDir(), "file")
		require.NoError(t, os.WriteFile(f, nil, 0o600))
		_, err = bash.New(bash.Config{Cwd: f, SpillDir: t.TempDir()})
		configErr(t, err, "cwd")
	})
}

const fullYAML = `
cwd: /tmp
timeoutMs: 1000
maxTimeoutMs: 2000
maxOutputBytes: 100
maxSpillBytes: 1000
graceMs: 50
maxBackground: 3
spillDir: /var/tmp
spillMaxAgeMs: 60000
spillMaxTotalBytes: 5000
managedPrefix: HX_
allowEnv: [KEYBOARD_LAYOUT]
`

const fullJSON = `{
  "cwd": "/tmp", "timeoutMs": 1000, "maxTimeoutMs": 2000, "maxOutputBytes": 100,
  "maxSpillBytes": 1000, "graceMs": 50, "maxBackground": 3, "spillDir": "/var/tmp",
  "spillMaxAgeMs": 60000, "spillMaxTotalBytes": 5000, "managedPrefix": "HX_",
  "allowEnv": ["KEYBOARD_LAYOUT"]
}`

func TestParseConfig(t *testing.T) {
	want := bash.Config{
		Cwd: "/tmp", Timeout: time.Second, MaxTimeout: 2 * time.Second, MaxOutputBytes: 100,
		MaxSpillBytes: 1000, Grace: 50 * time.Millisecond, MaxBackground: 3, SpillDir: "/var/tmp",
		SpillMaxAge: time.Minute, SpillMaxTotalBytes: 5000, ManagedPrefix: "HX_",
		AllowEnv: []string{"KEYBOARD_LAYOUT"},
	}
	got, err := bash.ParseConfigYAML([]byte(fullYAML))
	require.NoError(t, err)
	assert.Equal(t, want, got)
	got, err = bash.ParseConfigJSON([]byte(fullJSON))
	require.NoError(t, err)
	assert.Equal(t, want, got)

	// Empty documents, nulls and omitted keys take the defaults.
	for _, doc := range []string{"", "# nothing\n", "timeoutMs: null\ncwd:\n"} {
		got, err = bash.ParseConfigYAML([]byte(doc))
		require.NoError(t, err, doc)
		assert.Equal(t, bash.Config{}, got)
	}
	got, err = bash.ParseConfigJSON([]byte(`{"timeoutMs": null}`))
	require.NoError(t, err)
	assert.Equal(t, bash.Config{}, got)
	// Integral floats are whole numbers.
	got, err = bash.ParseConfigYAML([]byte("graceMs: 1e3"))
	require.NoError(t, err)
	assert.Equal(t, time.Second, got.Grace)
}

func TestParseConfigErrors(t *testing.T) {
	cases := []struct {
		name, yaml, json, key, says string
		line                        int
	}{
		{"unknown key", "timeoutMs: 5\nbogus: 1", `{"timeoutMs": 5,` + "\n" + `"bogus": 1}`, "bogus", "unknown key", 2},
		{"case typo", "timeoutMS: 5", `{"timeoutMS": 5}`, "timeoutMS", "did you mean timeoutMs", 1},
		{"negative", "graceMs: -1", `{"graceMs": -1}`, "graceMs", "negative", 1},
		{"zero", "maxOutputBytes: 0", `{"maxOutputBytes": 0}`, "maxOutputBytes", "omit the key", 1},
		{"fraction", "maxSpillBytes: 1.5", `{"maxSpillBytes": 1.5}`, "maxSpillBytes", "not a whole number", 1},
		{"string for number", `timeoutMs: "100"`, `{"timeoutMs": "100"}`, "timeoutMs", `the string "100"`, 1},
		{"number for string", "cwd: 5", `{"cwd": 5}`, "cwd", "want a string", 1},
		{"bad list", "allowEnv: [1]", `{"allowEnv": [1]}`, "allowEnv", "entry 0", 1},
		{"timeout above max", "maxTimeoutMs: 1000\ntimeoutMs: 2000", `{"maxTimeoutMs": 1000,` + "\n" + `"timeoutMs": 2000}`, "timeoutMs", "above maxTimeoutMs", 2},
		{"timeout above default max", "timeoutMs: 600001", `{"timeoutMs": 600001}`, "timeoutMs", "above maxTimeoutMs 600000", 1},
		{"duplicate", "graceMs: 1\ngraceMs: 2", `{"graceMs": 1,` + "\n" + `"graceMs": 2}`, "graceMs", "given twice", 2},
		{"too large", "graceMs: 99999999999999999", `{"graceMs": 99999999999999999}`, "graceMs", "too large", 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := bash.ParseConfigYAML([]byte(c.yaml))
			ce := configErr(t, err, c.key)
			assert.Contains(t, err.Error(), c.says)
			assert.Equal(t, c.line, ce.Line, "yaml: %v", err)
			_, err = bash.ParseConfigJSON([]byte(c.json))
			ce = configErr(t, err, c.key)
			assert.Contains(t, err.Error(), c.says)
			assert.Equal(t, c.line, ce.Line, "json: %v", err)
		})
	}
	for name, doc := range map[string]string{
		"yaml list": "- a\n- b", "yaml scalar": "hello", "yaml syntax": "a: [", "json array": "[1]",
		"json syntax": `{"timeoutMs": 1`, "json trailing": `{} {}`, "json empty": "",
	} {
		t.Run(name, func(t *testing.T) {
			var err error
			if strings.HasPrefix(name, "yaml") {
				_, err = bash.ParseConfigYAML([]byte(doc))
			} else {
				_, err = bash.ParseConfigJSON([]byte(doc))
			}
			configErr(t, err, "")
		})
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(dir, "work"), 0o700))
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
		return p
	}
	c, err := bash.LoadConfig(write("c.yaml", "cwd: work\ntimeoutMs: 5000\n"))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "work"), c.Cwd, "relative to the file")
	assert.Equal(t, 5*time.Second, c.Timeout)
	abs := filepath.Join(dir, "spill") // absolute on every OS (C:\... on Windows)
	c, err = bash.LoadConfig(write("c.json", `{"graceMs": 10, "spillDir": `+strconv.Quote(abs)+`}`))
	require.NoError(t, err)
	assert.Equal(t, 10*time.Millisecond, c.Grace)
	assert.Equal(t, abs, c.SpillDir)

	_, err = bash.LoadConfig(write("bad.json", `{"nope": 1}`))
	configErr(t, err, "nope")
	assert.Contains(t, err.Error(), "bad.json")
	_, err = bash.LoadConfig(filepath.Join(dir, "missing.yaml"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
	var be *bash.Error
	assert.True(t, errors.As(err, &be))
}

// The reference's own shape: a list of tool entries, the executor's keys under config: of the
// `- id: bash` entry.
func TestConfigReferenceShape(t *testing.T) {
	c, err := bash.ParseConfigYAML([]byte(`- id: other
  config: {cwd: /nowhere}
- id: bash
  name: '@deepseek-ai/dsh-bash-local'
  config:
    cwd: /work
    timeoutMs: 120000
    maxTimeoutMs: 600000
`))
	require.NoError(t, err)
	assert.Equal(t, "/work", c.Cwd)
	assert.Equal(t, 120*time.Second, c.Timeout)
	assert.Equal(t, 600*time.Second, c.MaxTimeout)

	c, err = bash.ParseConfigYAML([]byte("- id: bash\n"))
	require.NoError(t, err)
	assert.Equal(t, bash.Config{}, c, "an entry without config: is the defaults")

	_, err = bash.ParseConfigYAML([]byte("- id: other\n  config: {}\n"))
	require.ErrorIs(t, err, bash.ErrInvalid)
	assert.ErrorContains(t, err, "no `- id: bash` entry")
	_, err = bash.ParseConfigYAML([]byte("- id: bash\n  config: [1]\n"))
	require.ErrorIs(t, err, bash.ErrInvalid)
	assert.ErrorContains(t, err, "must be a mapping")
	_, err = bash.ParseConfigYAML([]byte("- id: bash\n  config: {timeoutMs: -1}\n"))
	require.ErrorIs(t, err, bash.ErrInvalid, "the keys are checked as usual")
}
