package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A normal day inside the default sandbox: go build and go test, cc, a git commit, pip install
// of a local package into a venv of the workspace, npm install of a local package. The caches
// go to the sandbox's own place; nothing needs the network or a writable home.
func TestDevDay(t *testing.T) {
	vs := variants(t)
	tools := map[string]string{}
	for _, name := range []string{"go", "git", "cc", "npm", "node"} {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Skipf("%s is not installed here", name)
		}
		tools[name] = p
	}
	py, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Skip("python3 is not installed here")
	}
	var path []string
	for _, p := range []string{tools["go"], tools["git"], tools["cc"], tools["npm"], strings.TrimSpace(string(py))} {
		path = append(path, filepath.Dir(p))
	}
	path = append(path, "/usr/bin", "/bin")
	script := `set -e
mkdir -p gomod && cd gomod && go mod init example.com/day >/dev/null 2>&1
printf 'package main\n\nfunc Add(a, b int) int { return a + b }\n\nfunc main() { println(Add(1, 2)) }\n' > main.go
printf 'package main\n\nimport "testing"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal("no")\n\t}\n}\n' > main_test.go
go build -o day . && ./day 2>&1 && go test ./... >/dev/null && echo go-ok && cd ..
printf 'int main(void) { return 0; }\n' > c.c && cc -o c c.c && ./c && echo cc-ok
git init -q repo && cd repo && echo x > f && git add f && git -c user.name=a -c user.email=a@b commit -qm one && echo git-ok && cd ..
python3 -c '
import zipfile
with zipfile.ZipFile("daylib-1.0-py3-none-any.whl", "w") as z:
    z.writestr("daylib/__init__.py", "VALUE = 42\n")
    z.writestr("daylib-1.0.dist-info/METADATA", "Metadata-Version: 2.1\nName: daylib\nVersion: 1.0\n")
    z.writestr("daylib-1.0.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr("daylib-1.0.dist-info/RECORD", "daylib/__init__.py,,\ndaylib-1.0.dist-info/METADATA,,\ndaylib-1.0.dist-info/WHEEL,,\ndaylib-1.0.dist-info/RECORD,,\n")
'
python3 -m venv .venv && .venv/bin/pip install -q --no-index ./daylib-1.0-py3-none-any.whl && .venv/bin/python -c 'import daylib; print("pip-ok", daylib.VALUE)'
mkdir -p jslib app && printf '{"name":"jslib","version":"1.0.0","main":"index.js"}' > jslib/package.json && echo 'module.exports = 7' > jslib/index.js
cd app && printf '{"name":"app","version":"1.0.0"}' > package.json && npm install --offline --no-audit --no-fund ../jslib >/dev/null 2>&1 && node -e 'console.log("npm-ok", require("jslib"))'
`
	for _, v := range vs {
		if v.backend != Namespaces && v.backend != Bubblewrap {
			continue // the day is the namespaced backends' promise; Landlock alone has no private caches' home
		}
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t)
			prog := w.sh(script)
			prog.Env = []string{"PATH=" + strings.Join(path, ":"), "HOME=" + w.home, "GOTOOLCHAIN=local", "GOFLAGS=-mod=mod"}
			r, _ := v.run(t, Policy{}, prog)
			for _, want := range []string{"3", "go-ok", "cc-ok", "git-ok", "pip-ok 42", "npm-ok 7"} {
				require.Contains(t, r.stdout+r.stderr, want, "%+v", r)
			}
			_, err := os.Stat(filepath.Join(w.home, ".cache"))
			require.ErrorIs(t, err, os.ErrNotExist, "nothing was written to the home directory")
		})
	}
}
