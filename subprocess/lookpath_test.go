package subprocess

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Windows' executable resolution (PATHEXT, ';'-separated PATH, no execute bit), exercised on
// any OS through pathRules. File names keep their extensions in lower case so the tests mean
// the same on case-sensitive and case-insensitive file systems.

func windowsPathRules(pathext string) pathRules {
	return pathRules{listSep: ";", exts: parsePathExt(pathext)}
}

// touchExe creates dir/name (and its parent directories) as a plain 0644 file: PATHEXT
// resolution does not look at execute bits.
func touchExe(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte("@echo off\n"), 0o644))
	return p
}

func TestParsePathExt(t *testing.T) {
	def := []string{".com", ".exe", ".bat", ".cmd"}
	assert.Equal(t, def, parsePathExt(""))
	assert.Equal(t, def, parsePathExt("  "))
	assert.Equal(t, def, parsePathExt(defaultPathExt))
	assert.Equal(t, []string{".exe", ".bat", ".cmd", ".ps1"}, parsePathExt(" .EXE ; bat;;.Cmd;.PS1;"))
	assert.Nil(t, parsePathExt(";;"), "a PATHEXT of separators only names no extension")
}

func TestResolvePathExt(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	exe := touchExe(t, a, "tool.exe")
	touchExe(t, a, "tool.bat")
	cmd := touchExe(t, b, "only.cmd")
	path := a + ";" + b
	r := windowsPathRules("")

	t.Run("bare name takes the first PATHEXT extension that exists", func(t *testing.T) {
		got, err := resolveExecutable("tool", "", path, r)
		require.NoError(t, err)
		assert.Equal(t, exe, got)
	})
	t.Run("PATHEXT order decides", func(t *testing.T) {
		got, err := resolveExecutable("tool", "", path, windowsPathRules(".BAT;.EXE"))
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(a, "tool.bat"), got)
	})
	t.Run("later PATH entries are searched", func(t *testing.T) {
		got, err := resolveExecutable("only", "", path, r)
		require.NoError(t, err)
		assert.Equal(t, cmd, got)
	})
	t.Run("a listed extension is taken as given, in any case", func(t *testing.T) {
		got, err := resolveExecutable("only.cmd", "", path, r)
		require.NoError(t, err)
		assert.Equal(t, cmd, got)
		upper := touchExe(t, b, "Upper.EXE")
		got, err = resolveExecutable("Upper.EXE", "", path, r)
		require.NoError(t, err)
		assert.Equal(t, upper, got, "no second extension is appended")
	})
	t.Run("an extension missing from PATHEXT is not tried", func(t *testing.T) {
		touchExe(t, a, "script.ps1")
		_, err := resolveExecutable("script", "", path, r)
		require.ErrorIs(t, err, ErrNotFound)
		got, err := resolveExecutable("script", "", path, windowsPathRules(".EXE;.PS1"))
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(a, "script.ps1"), got)
	})
	t.Run("a file without an extension is not executable", func(t *testing.T) {
		noext := touchExe(t, b, "noext")
		_, err := resolveExecutable(noext, "", "", r)
		require.ErrorIs(t, err, ErrPermission)
		assert.ErrorContains(t, err, "has no extension")
		_, err = resolveExecutable("noext", "", path, r)
		require.ErrorIs(t, err, ErrPermission, "found on PATH, but not executable")
		touchExe(t, b, "noext.bat")
		got, err := resolveExecutable("noext", "", path, r)
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(b, "noext.bat"), got, "a PATHEXT variant is taken instead")
	})
	t.Run("absolute path without extension", func(t *testing.T) {
		got, err := resolveExecutable(filepath.Join(a, "tool"), "", "", r)
		require.NoError(t, err)
		assert.Equal(t, exe, got)
	})
	t.Run("relative path with a separator is taken against cwd", func(t *testing.T) {
		sub := touchExe(t, b, filepath.Join("sub", "inner.exe"))
		got, err := resolveExecutable("sub/inner", b, "", r)
		require.NoError(t, err)
		assert.Equal(t, sub, got)
	})
	t.Run("a directory named like a program is skipped", func(t *testing.T) {
		c, d := t.TempDir(), t.TempDir()
		require.NoError(t, os.Mkdir(filepath.Join(c, "app.exe"), 0o755))
		want := touchExe(t, d, "app.cmd")
		got, err := resolveExecutable("app", "", c+";"+d, r)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	})
	t.Run("not found names the PATH searched and skips relative entries", func(t *testing.T) {
		_, err := resolveExecutable("nothing", "", "relative;;"+a, r)
		require.ErrorIs(t, err, ErrNotFound)
		var e *Error
		require.True(t, errors.As(err, &e))
		assert.Contains(t, e.Err.Error(), a)
		assert.NotContains(t, e.Err.Error(), "relative")
	})
	t.Run("the current directory is never searched implicitly", func(t *testing.T) {
		cwd := t.TempDir()
		touchExe(t, cwd, "local.exe")
		_, err := resolveExecutable("local", cwd, a, r)
		require.ErrorIs(t, err, ErrNotFound)
		_, err = resolveExecutable("local", cwd, ".;"+a, r)
		require.ErrorIs(t, err, ErrNotFound, `"." in PATH is relative: skipped`)
	})
	t.Run("a ':'-separated PATH is one entry under ';' rules", func(t *testing.T) {
		_, err := resolveExecutable("tool", "", a+":"+b, r)
		require.ErrorIs(t, err, ErrNotFound)
	})
}

// Service.resolve reads PATH and PATHEXT from the environment under the platform's env rules:
// on Windows the names are case-insensitive.
func TestServiceResolveWindowsRules(t *testing.T) {
	dir := t.TempDir()
	touchExe(t, dir, "tool.exe")
	cmd := touchExe(t, dir, "tool.cmd")
	s := &Service{cwd: t.TempDir(), rules: envRules{foldCase: true}, paths: windowsPathRules("")}

	got, err := s.resolve("tool", []string{"Path=" + dir, "PathExt=.CMD"}, s.cwd)
	require.NoError(t, err)
	assert.Equal(t, cmd, got, "Path and PathExt are found whatever their case")

	got, err = s.resolve("tool", []string{"path=" + dir}, s.cwd)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "tool.exe"), got, "no PATHEXT: the default list")

	got, err = s.resolve("tool", []string{"PATH=" + dir, "pathext=.exe", "PATHEXT=.cmd"}, s.cwd)
	require.NoError(t, err)
	assert.Equal(t, cmd, got, "the later of two spellings wins, as in the child")
}
