package lsp

import (
	"path/filepath"
	"strings"
	"time"
)

// Preset returns the Config of a known server, by its name or its program's name (a path's
// last element, ".exe" and ".cmd" ignored): settings in the shape the server reads them,
// initialization options and the position encodings it takes. Known: gopls; pyright
// (pyright-langserver; "pyright-strict" for strict type checking); typescript-language-server;
// clangd; bash-language-server; yaml-language-server; pylsp. Each call returns a new Config,
// which the caller may change.
//
//   - gopls: diagnostics 250ms after a change on disk instead of 1s (diagnosticsDelay), so
//     files edited on disk are re-diagnosed quickly.
//   - pyright: the nested "python": {"analysis": {...}} form (pyright asks for the section
//     "python.analysis"; a key written "python.analysis" is found too, but the nested form is
//     the one pyright documents), standard type checking of open files.
//   - typescript-language-server: a rename renames the symbol itself, never only an
//     import's local name; publishes come without versions, so they are ordered with a
//     longer quiet time.
//   - clangd: UTF-8 positions (byte columns, as compilers print them), background index.
//   - bash-language-server, yaml-language-server, pylsp: their command lines; yaml validation.
func Preset(name string) (Config, bool) {
	base := strings.ToLower(filepath.Base(name))
	base = strings.TrimSuffix(strings.TrimSuffix(base, ".exe"), ".cmd")
	switch base {
	case "gopls":
		return Config{Path: name, Settings: map[string]any{"gopls": map[string]any{"diagnosticsDelay": "250ms"}}}, true
	case "pyright", "pyright-langserver", "pyright-strict":
		mode := "standard"
		path := name
		if base == "pyright-strict" {
			mode = "strict"
			path = "pyright-langserver"
		} else if base == "pyright" {
			path = "pyright-langserver"
		}
		return Config{Path: path, Args: []string{"--stdio"}, Settings: map[string]any{
			"python": map[string]any{"analysis": map[string]any{"typeCheckingMode": mode, "diagnosticMode": "openFilesOnly"}},
		}}, true
	case "typescript-language-server":
		return Config{Path: name, Args: []string{"--stdio"}, UnversionedSettle: time.Second,
			InitializationOptions: map[string]any{"preferences": map[string]any{"providePrefixAndSuffixTextForRename": false}}}, true
	case "clangd":
		return Config{Path: name, Args: []string{"--background-index"}, PositionEncodings: []PositionEncoding{UTF8, UTF16}}, true
	case "bash-language-server":
		return Config{Path: name, Args: []string{"start"}}, true
	case "yaml-language-server":
		return Config{Path: name, Args: []string{"--stdio"}, Settings: map[string]any{"yaml": map[string]any{"validate": true}}}, true
	case "pylsp":
		return Config{Path: name}, true
	}
	return Config{}, false
}

// WithPreset fills the zero fields of cfg (Args, Settings, InitializationOptions,
// PositionEncodings, UnversionedSettle) from the Preset of cfg.Path's program, when there is
// one; fields cfg sets are kept. A Path naming a preset ("pyright") becomes its program.
func WithPreset(cfg Config) Config {
	p, ok := Preset(cfg.Path)
	if !ok {
		return cfg
	}
	if cfg.Args == nil {
		cfg.Args = p.Args
		cfg.Path = p.Path // "pyright" runs pyright-langserver
	}
	if cfg.Settings == nil {
		cfg.Settings = p.Settings
	}
	if cfg.InitializationOptions == nil {
		cfg.InitializationOptions = p.InitializationOptions
	}
	if cfg.PositionEncodings == nil {
		cfg.PositionEncodings = p.PositionEncodings
	}
	if cfg.UnversionedSettle == 0 {
		cfg.UnversionedSettle = p.UnversionedSettle
	}
	return cfg
}
