package main

import (
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/subkit/subkit/internal/testutil"
)

// refusedWrite reports whether a Python error name is that of a refused write: EACCES under
// Landlock, EROFS in a mount namespace.
func refusedWrite(name string) bool { return name == "PermissionError" || name == "OSError" }

// subkit bash --sandbox writes only where it may, and says which backend enforced.
func TestBashSandboxJSON(t *testing.T) {
	dir, outside := t.TempDir(), testutil.DirOutsideTmp(t, "outside-")
	code, out, _ := cli(t, "", "bash", "--sandbox", "--writable", dir, "--json",
		"touch "+dir+"/ok; touch "+outside+"/x-outside")
	require.Equal(t, 0, code, out)
	res := decode[bashResult](t, out)
	require.NotNil(t, res.Sandbox, out)
	assert.NotEmpty(t, res.Sandbox.Backend)
	assert.Equal(t, "off", res.Sandbox.Network)
	assert.NotNil(t, res.Sandbox.Unenforced)
	assert.FileExists(t, filepath.Join(dir, "ok"))
	assert.NoFileExists(t, filepath.Join(outside, "x-outside"))
	assert.NotEqual(t, 0, *res.ExitCode, "the refused touch fails the command")

	code, out, _ = cli(t, "", "exec", "--sandbox", "--network", "on", "--json", "--", "true")
	require.Equal(t, 0, code, out)
	assert.Equal(t, "on", decode[execResult](t, out).Sandbox.Network)

	code, out, _ = cli(t, "", "code", "--lang", "python3", "--sandbox", "--json", "open("+strconv.Quote(outside+"/py")+", 'w')")
	require.Equal(t, 0, code, out)
	co := decode[codeResult](t, out)
	require.NotNil(t, co.Sandbox, out)
	assert.Equal(t, 1, *co.ExitCode)
	require.NotNil(t, co.Error, "the structured error survives the sandbox: %s", out)
	assert.True(t, refusedWrite(co.Error.Name), co.Error.Name)
	assert.NoFileExists(t, filepath.Join(outside, "py"))

	code, _, stderr := cli(t, "", "exec", "--writable", dir, "--", "true")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, "--writable applies with --sandbox only")
	code, _, stderr = cli(t, "", "bash", "--sandbox", "--network", "maybe", "true")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, stderr, `--network "maybe"`)
}

// subkit shell --sandbox and subkit code --sandbox run confined: a write outside the --writable
// dir fails, the JSON has the "sandbox" object, and --hidden adds to the credential stores
// hidden by default (~/.ssh stays hidden in a home that is otherwise readable);
// --no-default-hidden leaves them readable.
func TestShellAndCodeSandboxJSON(t *testing.T) {
	dir, outside, home := t.TempDir(), testutil.DirOutsideTmp(t, "outside-"), testutil.DirOutsideTmp(t, "outside-")
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".ssh"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".ssh", "id_x"), []byte("SECRET-KEY-MARK\n"), 0o600))
	extra := filepath.Join(home, "extra-secret")
	require.NoError(t, os.WriteFile(extra, []byte("SECRET-EXTRA-MARK\n"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(home, "visible"), []byte("VISIBLE-MARK\n"), 0o600))
	t.Setenv("HOME", home)
	confined := []string{"--sandbox", "--writable", dir}

	script := filepath.Join(t.TempDir(), "script")
	require.NoError(t, os.WriteFile(script, []byte("touch "+dir+"/ok && echo inside-ok\n"+
		"touch "+outside+"/no || echo refused\n"+
		"cat ~/visible ~/.ssh/id_x "+extra+"; echo read-done\n"), 0o600))
	code, out, stderr := cli(t, "", append(append([]string{"shell"}, confined...), "--hidden", extra, "--json", "--script", script)...)
	require.Equal(t, 0, code, "%s\n%s", out, stderr)
	so := decode[shellOutput](t, out)
	require.NotNil(t, so.Sandbox, out)
	assert.NotEmpty(t, so.Sandbox.Backend)
	require.Len(t, so.Steps, 3, out)
	assert.Contains(t, so.Steps[0].Output, "inside-ok")
	assert.Contains(t, so.Steps[1].Output, "refused", "a write outside the writable dir fails")
	assert.Contains(t, so.Steps[2].Output, "VISIBLE-MARK", "the home is readable")
	assert.Contains(t, so.Steps[2].Output, "read-done")
	assert.NotContains(t, out, "SECRET-KEY-MARK", "~/.ssh stays hidden with --hidden")
	assert.NotContains(t, out, "SECRET-EXTRA-MARK", "the --hidden path is hidden")
	assert.Subset(t, so.Sandbox.Hidden, []string{filepath.Join(home, ".ssh"), extra})
	assert.FileExists(t, filepath.Join(dir, "ok"))
	assert.NoFileExists(t, filepath.Join(outside, "no"), "a write outside the writable dirs")

	// --no-default-hidden: only the --hidden paths are hidden.
	code, out, stderr = cli(t, "", append(append([]string{"shell"}, confined...), "--no-default-hidden", "--hidden", extra, "--json", "--script", script)...)
	require.Equal(t, 0, code, "%s\n%s", out, stderr)
	so = decode[shellOutput](t, out)
	require.NotNil(t, so.Sandbox, out)
	assert.Equal(t, []string{extra}, so.Sandbox.Hidden)
	assert.Contains(t, out, "SECRET-KEY-MARK", "the credential stores are readable")
	assert.NotContains(t, out, "SECRET-EXTRA-MARK")

	code, out, stderr = cli(t, "", append(append([]string{"code", "--lang", "bash"}, confined...), "--hidden", extra, "--json",
		"touch "+dir+"/code-ok; touch "+outside+"/code-no || echo refused; cat ~/visible ~/.ssh/id_x "+extra+"; echo ran")...)
	require.Equal(t, 0, code, "%s\n%s", out, stderr)
	co := decode[codeResult](t, out)
	require.NotNil(t, co.Sandbox, out)
	assert.Subset(t, co.Sandbox.Hidden, []string{filepath.Join(home, ".ssh"), extra})
	assert.Contains(t, co.Stdout.Tail, "VISIBLE-MARK")
	assert.Contains(t, co.Stdout.Tail, "refused")
	assert.Contains(t, co.Stdout.Tail, "ran")
	assert.NotContains(t, out, "SECRET-KEY-MARK")
	assert.NotContains(t, out, "SECRET-EXTRA-MARK")
	assert.FileExists(t, filepath.Join(dir, "code-ok"))
	assert.NoFileExists(t, filepath.Join(outside, "code-no"))

	for _, args := range [][]string{
		{"shell", "--no-default-hidden", "--script", script},
		{"code", "--lang", "bash", "--allow-unix-socket", "/run/x.sock", "true"},
	} {
		code, _, stderr := cli(t, "", args...)
		assert.Equal(t, exitUsage, code, "%v", args)
		assert.Contains(t, stderr, "applies with --sandbox only", "%v", args)
	}
}

// --allow-unix-socket lets the confined program connect to a socket outside its writable dirs
// that it could not reach otherwise.
func TestSandboxAllowUnixSocket(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed")
	}
	real, err := exec.Command(py, "-c", "import sys; print(sys.executable)").Output() // past a version manager's shim
	require.NoError(t, err)
	sock := filepath.Join(t.TempDir(), "a.sock")
	ln, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	connect := "import socket; socket.socket(socket.AF_UNIX).connect(" + strconv.Quote(sock) + "); print('connected')"
	python := strings.TrimSpace(string(real))

	code, out, stderr := cli(t, "", "exec", "--sandbox", "--allow-unix-socket", sock, "--json", "--", python, "-c", connect)
	require.Equal(t, 0, code, "%s\n%s", out, stderr)
	res := decode[execResult](t, out)
	require.NotNil(t, res.Sandbox, out)
	assert.Equal(t, "connected\n", res.Stdout.Tail, "%s", out)

	code, out, stderr = cli(t, "", "exec", "--sandbox", "--json", "--", python, "-c", connect)
	require.Equal(t, 0, code, "%s\n%s", out, stderr)
	res = decode[execResult](t, out)
	assert.NotEqual(t, 0, *res.ExitCode, "without the flag the socket is out of reach: %s", out)
	assert.Empty(t, res.Stdout.Tail)
}

// --protected keeps a path of the writable dir read-only beside the defaults (.envrc);
// --no-default-protected leaves the defaults writable, keeping only --protected ones.
func TestSandboxProtectedFlags(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{".envrc", "Makefile"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), []byte("orig\n"), 0o644))
	}
	script := "echo planted >> .envrc && echo envrc-written; echo planted >> Makefile && echo makefile-written; echo done"
	code, out, _ := cli(t, "", "bash", "--sandbox", "--writable", dir, "--protected", "Makefile", "--json", "cd "+dir+" && { "+script+"; }")
	require.Equal(t, 0, code, out)
	res := decode[bashResult](t, out)
	require.NotNil(t, res.Sandbox, out)
	if res.Sandbox.Backend == "landlock" {
		t.Skip("protected paths need a mount namespace; the landlock backend says so in its Report")
	}
	assert.Contains(t, res.Stdout.Tail, "done")
	assert.NotContains(t, res.Stdout.Tail, "written", out)

	code, out, _ = cli(t, "", "bash", "--sandbox", "--writable", dir, "--no-default-protected", "--protected", "Makefile", "--json", "cd "+dir+" && { "+script+"; }")
	require.Equal(t, 0, code, out)
	res = decode[bashResult](t, out)
	assert.Contains(t, res.Stdout.Tail, "envrc-written", out)
	assert.NotContains(t, res.Stdout.Tail, "makefile-written", out)
	b, err := os.ReadFile(filepath.Join(dir, "Makefile"))
	require.NoError(t, err)
	assert.Equal(t, "orig\n", string(b))
}

// --network allow --allow HOST: the command reaches the allowed host through the sandbox's
// proxy and nothing else; --json names what was refused; the flags are checked.
func TestSandboxNetworkAllowFlags(t *testing.T) {
	allowed := hostHTTP(t)
	code, out, stderr := cli(t, "", "bash", "--sandbox", "--network", "allow", "--allow", allowed, "--json",
		"curl -sS --max-time 30 http://"+allowed+"/; curl -sS --max-time 30 http://refused.invalid/")
	if strings.Contains(stderr, "needs the namespaces backend") {
		t.Skipf("no namespaces backend here: %s", stderr)
	}
	require.Equal(t, 0, code, "%s%s", out, stderr)
	res := decode[bashResult](t, out)
	assert.Contains(t, res.Stdout.Tail, "ALLOWED-BODY\n")
	assert.Contains(t, res.Stdout.Tail, "refused.invalid:80 is not in the network allow-list (add --allow refused.invalid)")
	require.NotNil(t, res.Sandbox, out)
	assert.Equal(t, "allow", res.Sandbox.Network)
	assert.Equal(t, []string{allowed}, res.Sandbox.Allow)
	require.Len(t, res.Sandbox.NetworkRefused, 1, out)
	assert.Contains(t, res.Sandbox.NetworkRefused[0], "refused.invalid:80")

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"exec", "--sandbox", "--allow", "x.test", "--", "true"}, "--allow and --deny apply with --network allow only"},
		{[]string{"exec", "--sandbox", "--network", "allow", "--", "true"}, "--network allow needs at least one --allow HOST"},
		{[]string{"exec", "--sandbox", "--network", "allow", "--allow", "*.*.x", "--", "true"}, "*.*.x"},
	} {
		code, _, stderr := cli(t, "", c.args...)
		assert.Equal(t, exitUsage, code, "%v: %s", c.args, stderr)
		assert.Contains(t, stderr, c.want, "%v", c.args)
	}
}

// hostHTTP serves "ALLOWED-BODY" over HTTP on an address of this host other than loopback
// until the test ends, and returns its host:port.
func hostHTTP(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("no curl here (make deps installs it)")
	}
	l := testutil.HostListener(t)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ALLOWED-BODY\n") })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}
