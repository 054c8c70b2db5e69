package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// fsOps are shell commands run in the working directory of a world; each prints NAME:ok or
// NAME:fail. The "out" ones touch the outside directory and must fail under the sandbox, the
// others must work. OUT is the outside directory.
var fsOps = []struct {
	name string
	out  bool
	cmd  string
}{
	{"create-in", false, `echo new > created && test "$(cat created)" = new`},
	{"append-in", false, `echo more >> created`},
	{"mkdir-in", false, `mkdir d && echo x > d/f && rm d/f && rmdir d`},
	{"rename-in", false, `mv created renamed`},
	{"tmpdir", false, `test "$TMPDIR" = "$TMP_EXPECTED" && f=$(mktemp) && echo t > "$f" && rm "$f"`},
	{"create-out", true, `echo x > "$OUT/new"`},
	{"append-out", true, `echo x >> "$OUT/file"`},
	{"truncate-out", true, `: > "$OUT/file"`},
	{"remove-out", true, `rm "$OUT/file"`},
	{"mkdir-out", true, `mkdir "$OUT/d"`},
	{"rename-out", true, `echo r > mv && mv mv "$OUT/mv"`},
	{"symlink-file-out", true, `echo x >> link-file`},               // link-file -> $OUT/file, planted before the run
	{"symlink-dir-out", true, `echo x > link-dir/via-link`},         // link-dir -> $OUT
	{"hardlink-out", true, `ln "$OUT/file" hard && echo x >> hard`}, // a hard link in the workspace to a file outside
}

// fsScript runs fsOps, each in a subshell.
func fsScript() string {
	var b strings.Builder
	for _, op := range fsOps {
		fmt.Fprintf(&b, "if ( %s ) 2>>errors.log; then echo %s:ok; else echo %s:fail; fi\n", op.cmd, op.name, op.name)
	}
	return b.String()
}

// fsWorld is a world with the links fsOps use planted in its working directory.
func fsWorld(t *testing.T) (world, Program) {
	w := newWorld(t)
	require.NoError(t, os.Symlink(filepath.Join(w.outside, "file"), filepath.Join(w.work, "link-file")))
	require.NoError(t, os.Symlink(w.outside, filepath.Join(w.work, "link-dir")))
	prog := w.sh(fsScript())
	prog.Env = append(prog.Env, "OUT="+w.outside, "TMP_EXPECTED="+w.tmp)
	return w, prog
}

func outcomes(t *testing.T, stdout string) map[string]string {
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		name, res, ok := strings.Cut(line, ":")
		require.True(t, ok, "line %q", line)
		got[name] = res
	}
	require.Len(t, got, len(fsOps), "outcomes: %q", stdout)
	return got
}

// TestWritableRoots: inside the writable roots everything works, outside nothing does, though
// every operation works without the sandbox (so what refuses them is the sandbox, not the
// files' permissions).
func TestWritableRoots(t *testing.T) {
	vs := variants(t)

	t.Run("control", func(t *testing.T) {
		w, prog := fsWorld(t)
		// The test's TMPDIR check needs the variable the sandbox would set.
		prog.Env = append(prog.Env, "TMPDIR="+w.tmp)
		r := start(t, &Launch{Path: prog.Path, Args: prog.Args, Env: prog.Env}, w.work, nil)
		require.Equal(t, 0, r.code, "%+v", r)
		for name, res := range outcomes(t, r.stdout) {
			require.Equal(t, "ok", res, "unconfined %s must work: %s", name, readFile(t, filepath.Join(w.work, "errors.log")))
		}
	})

	for _, v := range vs {
		t.Run(v.name, func(t *testing.T) {
			w, prog := fsWorld(t)
			r, _ := v.run(t, Policy{}, prog)
			require.Equal(t, 0, r.code, "%+v", r)
			got := outcomes(t, r.stdout)
			for _, op := range fsOps {
				want := "ok"
				if op.out {
					want = "fail"
				}
				require.Equal(t, want, got[op.name], "%s (errors: %s)", op.name, readFile(t, filepath.Join(w.work, "errors.log")))
			}
			// Seen from outside: the outside directory is as it was.
			require.Equal(t, "outside\n", readFile(t, filepath.Join(w.outside, "file")))
			entries, err := os.ReadDir(w.outside)
			require.NoError(t, err)
			require.Len(t, entries, 1, "%v", entries)
			require.FileExists(t, filepath.Join(w.work, "renamed"))
			require.FileExists(t, filepath.Join(w.work, "mv"), "the file that could not leave the root is still there")
			require.NotEmpty(t, LikelyDenial([]byte(readFile(t, filepath.Join(w.work, "errors.log"))), 1))
		})
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return string(b)
}

// TestHidden: the default hidden paths (in a home of the test's) can be neither read nor
// listed, while the rest of the home and of the filesystem can; without the sandbox the
// same commands show the secrets.
func TestHidden(t *testing.T) {
	vs := variants(t)
	script := `cat ~/.ssh/id_ed25519; ls -a ~/.ssh; cat ~/.netrc; cat ~/.config/gcloud/credentials; ls ~/.config/gcloud;
cat ~/visible.txt; echo; cat ~/.config/visible.conf; echo; head -c 0 /etc/passwd && echo etc-readable; ls /usr | grep -qx bin && echo usr-listable`

	t.Run("control", func(t *testing.T) {
		w := newWorld(t)
		prog := w.sh(script)
		r := start(t, &Launch{Path: prog.Path, Args: prog.Args, Env: prog.Env}, w.work, nil)
		require.Equal(t, 3, strings.Count(r.stdout, secretMark), "%+v", r)
		require.Contains(t, r.stdout, "id_ed25519")
		require.Contains(t, r.stdout, "credentials")
	})

	for _, v := range vs {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t)
			r, rep := v.run(t, Policy{}, w.sh(script))
			require.NotContains(t, r.stdout, secretMark, "%+v", r)
			require.NotContains(t, r.stdout, "id_ed25519", "a hidden directory was listed: %+v", r)
			require.NotContains(t, r.stdout, "credentials", "a hidden directory was listed: %+v", r)
			require.Equal(t, 2, strings.Count(r.stdout, visibleMark), "%+v", r)
			require.Contains(t, r.stdout, "etc-readable")
			require.Contains(t, r.stdout, "usr-listable")
			want := []string{filepath.Join(w.home, ".ssh"), filepath.Join(w.home, ".config/gcloud"), filepath.Join(w.home, ".netrc")}
			slices.Sort(want)
			got := slices.Sorted(slices.Values(rep.Hidden))
			require.Equal(t, want, got, "the existing default hidden paths")
		})
	}
}

// TestHiddenInWritable: a hidden file inside the working directory (relative to it) stays
// hidden; the rest of the working directory stays writable.
func TestHiddenInWritable(t *testing.T) {
	for _, v := range variants(t) {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t)
			require.NoError(t, os.WriteFile(filepath.Join(w.work, ".env"), []byte(secretMark), 0o644))
			require.NoError(t, os.Mkdir(filepath.Join(w.work, "src"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(w.work, "src", "main.c"), []byte(visibleMark), 0o644))
			r, rep := v.run(t, Policy{Hidden: []string{".env"}, NoDefaultHidden: true},
				w.sh(`cat .env; cat src/main.c; echo; echo more >> src/main.c && echo src-writable; echo x > src/new && echo src-new`))
			require.NotContains(t, r.stdout, secretMark, "%+v", r)
			require.Contains(t, r.stdout, visibleMark)
			require.Contains(t, r.stdout, "src-writable")
			require.Contains(t, r.stdout, "src-new")
			require.Equal(t, []string{filepath.Join(w.work, ".env")}, rep.Hidden)
			if v.backend == Landlock {
				require.True(t, slices.ContainsFunc(rep.Notes, func(n string) bool { return strings.Contains(n, "writable root "+w.work) }), "%q", rep.Notes)
			}
		})
	}
}
