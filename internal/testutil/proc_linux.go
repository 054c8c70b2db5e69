package testutil

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// Marked lists the live (non-zombie) processes whose environment carries MarkVar=mark.
func Marked(mark string) []int {
	needle := []byte(MarkVar + "=" + mark + "\x00")
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(append(env, 0), needle) {
			continue
		}
		if !zombie(e.Name()) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// zombie reports whether /proc/<pid> is a zombie.
func zombie(pid string) bool {
	st, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(st, ')')
	return i > 0 && i+2 < len(st) && st[i+2] == 'Z'
}

// Tagged lists the live (non-zombie) processes one of whose arguments is tag: how a test finds
// processes that cleared their environment, which Marked cannot see.
func Tagged(tag string) []int {
	needle := []byte("\x00" + tag + "\x00")
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil || !bytes.Contains(append([]byte{0}, cmd...), needle) || zombie(e.Name()) {
			continue
		}
		pids = append(pids, pid)
	}
	return pids
}

func killPid(pid int) { syscall.Kill(pid, syscall.SIGKILL) }

func describe(pids []int) string {
	var parts []string
	for _, pid := range pids {
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		parts = append(parts, fmt.Sprintf("%d %q", pid, strings.ReplaceAll(string(cmd), "\x00", " ")))
	}
	return strings.Join(parts, "; ")
}

func countFDs() int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return -1
	}
	return len(ents) - 1 // the directory being read
}

func listFDs() string {
	ents, _ := os.ReadDir("/proc/self/fd")
	var out []string
	for _, e := range ents {
		l, _ := os.Readlink("/proc/self/fd/" + e.Name())
		out = append(out, e.Name()+"->"+l)
	}
	return strings.Join(out, " ")
}
