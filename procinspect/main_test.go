package procinspect_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if spec, ok := os.LookupEnv(treeVar); ok {
		os.Exit(treeNode(spec))
	}
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if left := leftoverProcesses(); len(left) > 0 {
			fmt.Fprintf(os.Stderr, "procinspect tests left processes behind: %v\n", left)
			if code == 0 {
				code = 1
			}
		}
		os.Exit(code)
	}))
}

// treeVar makes the test binary a node of a process tree that a test builds, shaped by the
// variable's value: levels separated by commas, each "N" (this node starts N children) or
// "cN" (N children, each through cmd.exe /c, so that a cmd.exe stands between them), the
// rest of the levels passed on to each child. "" makes a leaf.
//
// A node writes to stdout "self PID", then one line "proc PID PPID NAME" for each process
// below it (what it started, and what its children report), then "ready" once every child
// is ready. It then reads stdin to its end, closes its children's stdin, waits for them and
// exits: closing the root's stdin ends the whole tree, leaves first, every process waited
// for by its parent.
const treeVar = "SUBKIT_PROCINSPECT_TREE"

func treeNode(spec string) (code int) {
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tree node:", err)
		return 1
	}
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(out, "self %d\n", os.Getpid())
	levels := strings.SplitN(spec, ",", 2)
	var rest string
	if len(levels) == 2 {
		rest = levels[1]
	}
	n, viaCmd := 0, false
	if levels[0] != "" {
		viaCmd = strings.HasPrefix(levels[0], "c")
		if n, err = strconv.Atoi(strings.TrimPrefix(levels[0], "c")); err != nil {
			fmt.Fprintln(os.Stderr, "tree node: bad spec", spec)
			return 1
		}
	}
	type child struct {
		cmd    *exec.Cmd
		stdin  io.WriteCloser
		stdout io.Reader
	}
	var children []child
	defer func() {
		for _, c := range children {
			c.stdin.Close()
			if err := c.cmd.Wait(); err != nil {
				fmt.Fprintln(os.Stderr, "tree node: child:", err)
				code = 1
			}
		}
	}()
	// Start every child first, so that siblings start side by side, then collect what each
	// reports until it is ready.
	for range n {
		cmd := exec.Command(exe)
		if viaCmd {
			cmd = exec.Command("cmd.exe", "/c", exe)
		}
		cmd.Env = append(os.Environ(), treeVar+"="+rest)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			fmt.Fprintln(os.Stderr, "tree node:", err)
			return 1
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			fmt.Fprintln(os.Stderr, "tree node:", err)
			return 1
		}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, "tree node:", err)
			return 1
		}
		children = append(children, child{cmd, stdin, stdout})
	}
	for _, c := range children {
		parent := os.Getpid()
		if viaCmd {
			fmt.Fprintf(out, "proc %d %d cmd.exe\n", c.cmd.Process.Pid, parent)
			parent = c.cmd.Process.Pid
		}
		sc := bufio.NewScanner(c.stdout)
		ready := false
		for !ready && sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "self "):
				fmt.Fprintf(out, "proc %s %d %s\n", strings.TrimPrefix(line, "self "), parent, filepath.Base(exe))
			case strings.HasPrefix(line, "proc "):
				fmt.Fprintln(out, line)
			case line == "ready":
				ready = true
			}
		}
		if !ready {
			fmt.Fprintln(os.Stderr, "tree node: a child ended before it was ready:", sc.Err())
			return 1
		}
	}
	fmt.Fprintln(out, "ready")
	if err := out.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "tree node:", err)
		code = 1
	}
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		fmt.Fprintln(os.Stderr, "tree node: stdin:", err)
		code = 1
	}
	return code
}
