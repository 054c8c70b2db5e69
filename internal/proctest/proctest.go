package proctest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Var is the environment variable that makes the test binary a node of a tree. Its value is
// the shape of the tree below the node: levels separated by commas, each "N" (the node
// starts N children) or "cN" (N children, each through the shell, cmd.exe /c on Windows and
// sh -c elsewhere, so that a shell process stands between them); the rest of the levels goes
// to each child. "" makes a leaf.
//
// A node writes to stdout "self PID", then one line "proc PID PPID NAME" for each process
// below it (what it started, and what its children report), then "ready" once every child
// is ready. It then reads stdin to its end, closes its children's stdin, waits for them and
// exits, 0 when all went well.
const Var = "SUBKIT_PROCTEST_TREE"

// Main runs this process as a node of a tree, and exits, when Var is set; otherwise it
// returns at once.
func Main() {
	if spec, ok := os.LookupEnv(Var); ok {
		os.Exit(node(spec))
	}
}

// Shell is the name of the shell a "cN" level puts between a node and its children:
// "cmd.exe" on Windows, "sh" elsewhere.
func Shell() string {
	if runtime.GOOS == "windows" {
		return "cmd.exe"
	}
	return "sh"
}

func shellCommand(exe string, args []string) *exec.Cmd {
	if runtime.GOOS == "windows" {
		return exec.Command("cmd.exe", append([]string{"/c", exe}, args...)...)
	}
	// exec replaces sh only at the end of a -c string: the node is a child of sh.
	return exec.Command("sh", append([]string{"-c", `"$0" "$@"; exit $?`, exe}, args...)...)
}

func node(spec string) (code int) {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "proctest node:", err)
		return 1
	}
	exe, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	args := os.Args[1:]
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintf(out, "self %d\n", os.Getpid())
	level, rest, _ := strings.Cut(spec, ",")
	n, viaShell := 0, strings.HasPrefix(level, "c")
	if level != "" {
		if n, err = strconv.Atoi(strings.TrimPrefix(level, "c")); err != nil {
			return fail(fmt.Errorf("bad shape %q", spec))
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
				code = fail(fmt.Errorf("child %d: %w", c.cmd.Process.Pid, err))
			}
		}
	}()
	// Start every child first, so that siblings start side by side, then collect what each
	// reports until it is ready.
	for range n {
		cmd := exec.Command(exe, args...)
		if viaShell {
			cmd = shellCommand(exe, args)
		}
		cmd.Env = append(os.Environ(), Var+"="+rest)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return fail(err)
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return fail(err)
		}
		if err := cmd.Start(); err != nil {
			return fail(err)
		}
		children = append(children, child{cmd, stdin, stdout})
	}
	for _, c := range children {
		parent := os.Getpid()
		if viaShell {
			fmt.Fprintf(out, "proc %d %d %s\n", c.cmd.Process.Pid, parent, Shell())
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
			return fail(fmt.Errorf("child %d ended before it was ready (%v)", c.cmd.Process.Pid, sc.Err()))
		}
	}
	fmt.Fprintln(out, "ready")
	if err := out.Flush(); err != nil {
		return fail(err)
	}
	if _, err := io.Copy(io.Discard, os.Stdin); err != nil {
		return fail(fmt.Errorf("stdin: %w", err))
	}
	return 0
}

// Proc is what a tree's nodes reported of one of its processes.
type Proc struct {
	PPid int    // the parent's pid
	Name string // the executable's file name: the test binary's, or Shell()
}

// Tree is a tree of processes that Start started.
type Tree struct {
	// Root is the pid of the tree's root, a child of the test process.
	Root int
	// Procs holds every process of the tree, the root included, by pid.
	Procs map[int]Proc

	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan error
}

// Start starts the test binary as the root of a tree shaped by shape (see Var), with args
// (for a test binary whose TestMain does not call Main: "-test.run=NAME" of a test that
// does; every node passes them on to its children), and returns once every process of the
// tree runs. A cleanup stops it.
func Start(t testing.TB, shape string, args ...string) *Tree {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatalf("proctest: %v", err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), Var+"="+shape)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatalf("proctest: %v", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("proctest: %v", err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("proctest: %v", err)
	}
	tr := &Tree{Root: cmd.Process.Pid, Procs: map[int]Proc{}, cmd: cmd, stdin: stdin}
	t.Cleanup(func() { tr.Stop(t) })
	tr.Procs[tr.Root] = Proc{os.Getpid(), filepath.Base(exe)}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "self" && f[1] == strconv.Itoa(tr.Root):
		case len(f) == 4 && f[0] == "proc":
			pid, err1 := strconv.Atoi(f[1])
			ppid, err2 := strconv.Atoi(f[2])
			if err := errors.Join(err1, err2); err != nil {
				t.Fatalf("proctest: the tree's root wrote %q: %v", sc.Text(), err)
			}
			tr.Procs[pid] = Proc{ppid, f[3]}
		case len(f) == 1 && f[0] == "ready":
			return tr
		default:
			t.Fatalf("proctest: the tree's root wrote %q", sc.Text())
		}
	}
	t.Fatalf("proctest: the tree's root ended before it was ready (%v)", sc.Err())
	return nil
}

// Stop ends the tree (see the package documentation) and waits for its root; a second call
// does nothing. A tree that has not ended 2 minutes after its root's stdin was closed fails
// the test and has its root killed.
func (tr *Tree) Stop(t testing.TB) {
	t.Helper()
	if tr.done != nil {
		return
	}
	tr.done = make(chan error, 1)
	tr.stdin.Close()
	go func() { tr.done <- tr.cmd.Wait() }()
	select {
	case err := <-tr.done:
		if err != nil {
			t.Errorf("proctest: the tree's root %d: %v", tr.Root, err)
		}
	case <-time.After(2 * time.Minute):
		_ = tr.cmd.Process.Kill()
		<-tr.done
		t.Errorf("proctest: the tree of %d had not ended 2 minutes after its stdin was closed", tr.Root)
	}
}
