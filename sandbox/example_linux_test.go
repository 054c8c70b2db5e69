package sandbox_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/subkit/subkit/sandbox"
)

// Confine a shell to its working directory: it writes there, not next to it. The test binary
// is its own helper (its TestMain runs sandbox.Main when started with the role); a program
// would call subprocess.HelperMain first thing in main and pass os.Executable().
func ExampleSandbox_Prepare() {
	helper, err := os.Executable()
	if err != nil {
		fmt.Println(err)
		return
	}
	sb, err := sandbox.New(helper)
	if err != nil {
		fmt.Println(err) // ErrUnsupported, saying what each backend lacks
		return
	}
	root, err := os.MkdirTemp("", "example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(root)
	work, tmp := filepath.Join(root, "work"), filepath.Join(root, "tmp")
	if err := errors.Join(os.Mkdir(work, 0o755), os.Mkdir(tmp, 0o700)); err != nil {
		fmt.Println(err)
		return
	}

	l, err := sb.Prepare(&sandbox.Policy{}, sandbox.Program{
		Path: "/bin/sh",
		Args: []string{"sh", "-c", `echo hi > inside && echo wrote inside; echo hi > /etc/outside || echo refused outside`},
		Env:  []string{"PATH=/usr/bin:/bin"},
		Dir:  work, TempDir: tmp, Home: root,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	cmd := exec.Command(l.Path)
	cmd.Args, cmd.Env, cmd.Dir = l.Args, l.Env, work
	cmd.SysProcAttr = l.SysProcAttr() // a session of its own, and the namespaces it needs
	out, err := cmd.Output()
	fmt.Print(string(out))
	fmt.Println("error:", err)
	_, err = os.Stat("/etc/outside")
	fmt.Println("outside exists:", err == nil)
	// Output:
	// wrote inside
	// refused outside
	// error: <nil>
	// outside exists: false
}
