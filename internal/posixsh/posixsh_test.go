package posixsh_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/subkit/subkit/internal/posixsh"
)

// childVar makes the test binary a program the scripts run: it prints its arguments joined
// by "|" and exits with the status the variable holds.
const childVar = "POSIXSH_TEST_CHILD"

func TestMain(m *testing.M) {
	if v := os.Getenv(childVar); v != "" {
		fmt.Println(strings.Join(os.Args[1:], "|"))
		code, _ := strconv.Atoi(v)
		os.Exit(code)
	}
	goleak.VerifyTestMain(m)
}

// run runs Main with args and stdin and returns its status, stdout and stderr.
func run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := posixsh.Main(context.Background(), args, strings.NewReader(stdin), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func self(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	return exe
}

func TestScript(t *testing.T) {
	code, out, errOut := run(t, "", "-c", `echo hi; x=$((1+2)); echo "$x $0 $1 $#"; exit 3`, "myname", "arg 1")
	assert.Equal(t, 3, code, errOut)
	assert.Equal(t, "hi\n3 myname arg 1 1\n", out)

	// bash's syntax: arrays, [[ ]], functions, here-documents, pipes into a group.
	code, out, errOut = run(t, "", "-c", `a=(x y z); f() { echo "${#a[@]} ${a[1]}"; }; f
[[ abc == a* ]] && echo glob
cat_ish() { while read -r l; do echo "<$l>"; done; }
cat_ish <<EOF
one
EOF
printf 'a b\n' | { read -r x y; echo "$y"; }`)
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "3 y\nglob\n<one>\nb\n", out)
}

// The programs a script runs are real processes with their arguments, environment, status
// and output; set -e and pipefail hold.
func TestPrograms(t *testing.T) {
	t.Setenv("SELF", self(t))
	t.Setenv(childVar, "0")
	code, out, errOut := run(t, "", "-c", `"$SELF" a "b c"; echo "status $?"; `+childVar+`=5 "$SELF" x; echo "status $?"`)
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "a|b c\nstatus 0\nx\nstatus 5\n", out)

	code, out, _ = run(t, "", "-c", `set -e; `+childVar+`=4 "$SELF" first; echo never`)
	assert.Equal(t, 4, code)
	assert.Equal(t, "first\n", out)

	code, out, _ = run(t, "", "-c", `set -o pipefail; `+childVar+`=6 "$SELF" left | while read -r l; do echo "read $l"; done; echo "status $?"`)
	assert.Equal(t, 0, code)
	assert.Equal(t, "read left\nstatus 6\n", out)
}

// cd changes where the next programs run; the shell starts in the process's directory.
func TestDirectory(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("DIR", dir)
	code, out, errOut := run(t, "", "-c", `cd "$DIR" && pwd && echo made > f.txt && [ -f "$DIR/f.txt" ] && echo found`)
	assert.Equal(t, 0, code, errOut)
	if runtime.GOOS == "windows" { // the interpreter's $PWD may have either slash
		out, dir = filepath.ToSlash(out), filepath.ToSlash(dir)
	}
	assert.Equal(t, dir+"\nfound\n", out)
}

// Bad input is a status and one line saying what was wrong, as bash gives them.
func TestErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"-c", "if then"}, 2, "sh: "},
		{[]string{"-c", "no-such-command-here"}, 127, "no-such-command-here"},
		{[]string{"-c"}, 2, "-c: option requires an argument"},
		{[]string{"-x"}, 2, "-x: invalid option"},
		{[]string{filepath.Join(t.TempDir(), "missing.sh")}, 127, "missing.sh"},
	} {
		code, _, errOut := run(t, "", c.args...)
		assert.Equal(t, c.code, code, "%q: %s", c.args, errOut)
		assert.Contains(t, errOut, c.msg, "%q", c.args)
	}
}

// A script file with parameters, and a script read from stdin.
func TestScriptSources(t *testing.T) {
	f := filepath.Join(t.TempDir(), "s.sh")
	require.NoError(t, os.WriteFile(f, []byte(`echo "$# $1 $2"`+"\n"), 0o644))
	code, out, errOut := run(t, "", f, "p1", "p2")
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, "2 p1 p2\n", out)

	code, out, errOut = run(t, "echo from stdin; exit 9\n")
	assert.Equal(t, 9, code, errOut)
	assert.Equal(t, "from stdin\n", out)
}
