package bash

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/subkit/subkit/sandbox"
	"github.com/subkit/subkit/subprocess"
)

// Defaults of the configuration keys. The first six are the reference executor's; the tail
// and the grace are the Service's own defaults (subprocess.DefaultTailBytes, DefaultGrace).
const (
	DefaultTimeout        = 120 * time.Second           // timeoutMs 120000
	DefaultMaxTimeout     = 600 * time.Second           // maxTimeoutMs 600000
	DefaultMaxOutputBytes = subprocess.DefaultTailBytes // maxOutputBytes 64000
	DefaultMaxSpillBytes  = 64 << 20                    // maxSpillBytes 67108864
	DefaultGrace          = subprocess.DefaultGrace     // graceMs 3000
	// DefaultDrainGrace is the executor's own: a Spec's drain defaults to its grace, which
	// would keep `sleep 1000 & echo done` open for 3 s.
	DefaultDrainGrace         = 250 * time.Millisecond // drainMs 250
	DefaultMaxBackground      = 64                     // maxBackground
	DefaultSpillMaxAge        = 24 * time.Hour         // spillMaxAgeMs 86400000
	DefaultSpillMaxTotalBytes = 1 << 30                // spillMaxTotalBytes 1073741824
	DefaultManagedPrefix      = subprocess.DefaultManagedPrefix
)

// Config configures an Executor. The zero value is ready to use: every zero field takes the
// default named beside it. Negative values are invalid. The fields with a key can also be read
// from a JSON or YAML file (see ParseConfigJSON, ParseConfigYAML, LoadConfig), where durations
// are whole milliseconds.
type Config struct {
	// Cwd (key "cwd") is the directory every command starts in. Empty means the host's working
	// directory when New runs; a relative path is taken against that directory. It must exist.
	Cwd string
	// Timeout (key "timeoutMs") is the foreground timeout of a Request that sets none. When
	// unset it is DefaultTimeout, or MaxTimeout if that is smaller.
	Timeout time.Duration
	// MaxTimeout (key "maxTimeoutMs") caps every foreground timeout: a Request asking for more
	// gets MaxTimeout. Timeout must not exceed it. Default DefaultMaxTimeout.
	MaxTimeout time.Duration
	// MaxOutputBytes (key "maxOutputBytes") is how many trailing bytes of each stream are kept
	// in memory; the whole stream goes to a spill file once it is longer. A foreground
	// Request may raise it for stdout with StdoutMaxBytes. Default DefaultMaxOutputBytes.
	MaxOutputBytes int
	// MaxSpillBytes (key "maxSpillBytes") is the largest stream kept whole in a spill file; a
	// longer stream keeps only its tail, marked truncated. Default DefaultMaxSpillBytes.
	MaxSpillBytes int64
	// Grace (key "graceMs") is how long a terminated command has between SIGTERM and SIGKILL.
	// Default DefaultGrace.
	Grace time.Duration
	// DrainGrace (key "drainMs") is how long output pipes may keep draining after the shell
	// exits while processes it started hold them open (`server &`): the result returns then,
	// with what arrived, and the survivors are reported. The reference used graceMs for this
	// too, so `sleep 1000 & echo done` took 3 s; a short drain returns it promptly. Default
	// DefaultDrainGrace.
	DrainGrace time.Duration
	// MaxBackground (key "maxBackground") caps the background processes running at once;
	// Start past it fails with ErrTooMany. Default DefaultMaxBackground.
	MaxBackground int
	// SpillDir (key "spillDir") is where the executor keeps its spill files, in a private
	// subdirectory of its own. Empty means the OS temp dir. Only entries this package created
	// are ever removed from it.
	SpillDir string
	// SpillMaxAge (key "spillMaxAgeMs"): spill files not written for longer are removed by
	// the retention sweep (on New, on Close and on Sweep). Default DefaultSpillMaxAge.
	SpillMaxAge time.Duration
	// SpillMaxTotalBytes (key "spillMaxTotalBytes"): when the spill files under SpillDir add
	// up to more, the sweep removes the oldest ones not in use until they fit. Default
	// DefaultSpillMaxTotalBytes.
	SpillMaxTotalBytes int64
	// ManagedPrefix (key "managedPrefix") marks the variables that belong to the harness: they
	// are removed from the host environment, refused in Request.Env, and the only names
	// Request.ManagedEnv accepts. Default DefaultManagedPrefix ("DSH_").
	ManagedPrefix string
	// AllowEnv (key "allowEnv") lists host variables kept although they look like credentials,
	// by name or by value (false positives such as KEYBOARD_LAYOUT).
	AllowEnv []string

	// Env is the host environment commands start from, before scrubbing; nil means
	// os.Environ(). There is no file key: a file never carries environment values.
	Env []string
	// TempDir is where the Service's private runtime root is made; empty means the OS temp
	// dir. No file key.
	TempDir string
	// Logger receives diagnostics (sweep trouble, lost spill files); nil means none.
	Logger *slog.Logger
	// Guard runs the executor's Service with a guard (subprocess.Config.Guard): nothing the
	// executor started outlives this process, even when it is killed with SIGKILL. It needs the
	// kit's helper executable (subprocess.HelperMain); it is not a config-file key.
	Guard bool
	// Service, when set, is the Service the executor spawns on, owned by the caller (see the
	// subprocess package doc): Close ends the executor's own commands but never closes it. Its
	// environment, runtime root and guard apply, so Env, AllowEnv, TempDir and Guard, which
	// configure a Service of the executor's own, must be unset; the startup variables
	// (BASH_ENV, ENV, SHELLOPTS, BASHOPTS) of its environment are set empty for each command.
	// Spill files still go under SpillDir. No file key.
	Service *subprocess.Service
	// Sandbox (key "sandbox") confines every command (see the sandbox package): nil runs them
	// unconfined. In a file, `sandbox: true` is the default policy (the working directory and a
	// private TMPDIR writable, the credential stores of sandbox.DefaultHidden hidden, no
	// network), or a mapping with the keys writable, hidden (lists of paths; hidden adds to
	// the credential stores), noDefaultHidden (true: only hidden is hidden), allowUnixSockets
	// (sockets the commands may connect to), protected (paths of the writable roots kept
	// read-only, added to sandbox.DefaultProtected), noDefaultProtected (true: only protected
	// is protected), network ("on", "off" or "allow": only the hosts of allow, less those of
	// deny, through the allow-list proxy), allow, deny, backend and limits
	// (cpuSeconds, fileSizeBytes, openFiles, processes, addressSpaceBytes). New fails with
	// ErrUnsupported when nothing here can enforce it; a command never runs unconfined when
	// confinement was asked for. It needs the kit's helper executable, as Guard does.
	Sandbox *sandbox.Policy
	// Shell (key "shell") is the bash that runs the commands: a path, a name searched in PATH,
	// or KitShell. Empty means `bash` from PATH, except on Windows, where it means Git Bash
	// when Git for Windows is installed (found through its registry key, next to git.exe on
	// PATH, or under Program Files or the user's programs; never System32's bash.exe, which
	// is WSL's) and otherwise KitShell. Config() reports the one chosen.
	Shell string
}

// KitShell, as Config.Shell, runs the commands with the kit's own shell (subprocess.Service.Shell:
// bash's syntax and builtins interpreted by mvdan.cc/sh in the kit's helper executable, with
// no utilities of its own: ls, grep or sed run only where the machine has them on PATH). It
// needs the helper executable, as Guard does.
const KitShell = "subkit-sh"

// configKey ties a file key to its Config field.
type configKey struct {
	key, field string
	set        func(c *Config, v any) error
}

// configKeys lists every file key, in documentation order.
func configKeys() []configKey {
	return []configKey{
		{"cwd", "Cwd", func(c *Config, v any) (err error) { c.Cwd, err = toString(v); return }},
		{"shell", "Shell", func(c *Config, v any) (err error) { c.Shell, err = toString(v); return }},
		{"timeoutMs", "Timeout", func(c *Config, v any) (err error) { c.Timeout, err = toMillis(v); return }},
		{"maxTimeoutMs", "MaxTimeout", func(c *Config, v any) (err error) { c.MaxTimeout, err = toMillis(v); return }},
		{"maxOutputBytes", "MaxOutputBytes", func(c *Config, v any) error {
			n, err := toPositive(v)
			c.MaxOutputBytes = int(n)
			return err
		}},
		{"maxSpillBytes", "MaxSpillBytes", func(c *Config, v any) (err error) { c.MaxSpillBytes, err = toPositive(v); return }},
		{"graceMs", "Grace", func(c *Config, v any) (err error) { c.Grace, err = toMillis(v); return }},
		{"drainMs", "DrainGrace", func(c *Config, v any) (err error) { c.DrainGrace, err = toMillis(v); return }},
		{"maxBackground", "MaxBackground", func(c *Config, v any) error {
			n, err := toPositive(v)
			c.MaxBackground = int(n)
			return err
		}},
		{"spillDir", "SpillDir", func(c *Config, v any) (err error) { c.SpillDir, err = toString(v); return }},
		{"spillMaxAgeMs", "SpillMaxAge", func(c *Config, v any) (err error) { c.SpillMaxAge, err = toMillis(v); return }},
		{"spillMaxTotalBytes", "SpillMaxTotalBytes", func(c *Config, v any) (err error) { c.SpillMaxTotalBytes, err = toPositive(v); return }},
		{"managedPrefix", "ManagedPrefix", func(c *Config, v any) (err error) { c.ManagedPrefix, err = toString(v); return }},
		{"allowEnv", "AllowEnv", func(c *Config, v any) (err error) { c.AllowEnv, err = toStrings(v); return }},
		{"sandbox", "Sandbox", func(c *Config, v any) (err error) { c.Sandbox, err = toPolicy(v); return }},
	}
}

func keyOf(field string) string {
	for _, k := range configKeys() {
		if k.field == field {
			return k.key
		}
	}
	return ""
}

func configErr(field string, format string, args ...any) error {
	return &ConfigError{Key: keyOf(field), Field: field, Err: fmt.Errorf(format, args...)}
}

// Validate reports the first invalid field: a negative number, a Timeout above MaxTimeout
// (after defaults), or a malformed ManagedPrefix or AllowEnv name. It does not touch the file
// system; New also checks that Cwd is a directory.
func (c Config) Validate() error {
	durations := []struct {
		field string
		d     time.Duration
	}{{"Timeout", c.Timeout}, {"MaxTimeout", c.MaxTimeout}, {"Grace", c.Grace}, {"DrainGrace", c.DrainGrace}, {"SpillMaxAge", c.SpillMaxAge}}
	for _, d := range durations {
		if d.d < 0 {
			return configErr(d.field, "%v is negative; use 0 (or omit the key) for the default", d.d)
		}
	}
	counts := []struct {
		field string
		n     int64
	}{
		{"MaxOutputBytes", int64(c.MaxOutputBytes)}, {"MaxSpillBytes", c.MaxSpillBytes},
		{"MaxBackground", int64(c.MaxBackground)}, {"SpillMaxTotalBytes", c.SpillMaxTotalBytes},
	}
	for _, n := range counts {
		if n.n < 0 {
			return configErr(n.field, "%d is negative; use 0 (or omit the key) for the default", n.n)
		}
	}
	d := c.withDefaults()
	if d.Timeout > d.MaxTimeout {
		return configErr("Timeout", "%d ms is above maxTimeoutMs %d ms; raise maxTimeoutMs or lower timeoutMs",
			d.Timeout.Milliseconds(), d.MaxTimeout.Milliseconds())
	}
	if c.Service != nil {
		set := []string{}
		for name, on := range map[string]bool{"Env": c.Env != nil, "AllowEnv": len(c.AllowEnv) > 0, "TempDir": c.TempDir != "", "Guard": c.Guard} {
			if on {
				set = append(set, name)
			}
		}
		if len(set) > 0 {
			slices.Sort(set)
			return configErr("Service", "%s configure the executor's own Service; with a shared Service, set them on it", strings.Join(set, ", "))
		}
	}
	if strings.ContainsAny(c.ManagedPrefix, "=\x00") {
		return configErr("ManagedPrefix", "%q contains '=' or a NUL byte", c.ManagedPrefix)
	}
	for i, name := range c.AllowEnv {
		if err := checkName(name); err != nil {
			return &ConfigError{Key: fmt.Sprintf("allowEnv[%d]", i), Field: "AllowEnv", Err: err}
		}
	}
	return nil
}

// withDefaults returns c with every zero field set to its default.
func (c Config) withDefaults() Config {
	if c.MaxTimeout == 0 {
		c.MaxTimeout = DefaultMaxTimeout
	}
	if c.Timeout == 0 {
		c.Timeout = min(DefaultTimeout, c.MaxTimeout)
	}
	if c.MaxOutputBytes == 0 {
		c.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if c.MaxSpillBytes == 0 {
		c.MaxSpillBytes = DefaultMaxSpillBytes
	}
	if c.Grace == 0 {
		c.Grace = DefaultGrace
	}
	if c.DrainGrace == 0 {
		c.DrainGrace = DefaultDrainGrace
	}
	if c.MaxBackground == 0 {
		c.MaxBackground = DefaultMaxBackground
	}
	if c.SpillMaxAge == 0 {
		c.SpillMaxAge = DefaultSpillMaxAge
	}
	if c.SpillMaxTotalBytes == 0 {
		c.SpillMaxTotalBytes = DefaultSpillMaxTotalBytes
	}
	if c.ManagedPrefix == "" {
		c.ManagedPrefix = DefaultManagedPrefix
	}
	c.AllowEnv = append([]string(nil), c.AllowEnv...)
	if c.Env != nil {
		c.Env = append([]string{}, c.Env...)
	}
	return c
}

// checkName validates an environment variable name.
func checkName(name string) error {
	switch {
	case name == "":
		return errors.New("empty variable name")
	case strings.ContainsAny(name, "=\x00"):
		return fmt.Errorf("variable name %q contains '=' or a NUL byte", name)
	}
	return nil
}
