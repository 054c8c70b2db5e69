package guard

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// message is one request or answer. Which fields are set depends on Op.
type message struct {
	Op string `json:"op"`
	ID uint64 `json:"id,omitempty"` // a spawn request and its answer

	// spawn
	Path    string   `json:"path,omitempty"`
	Args    []string `json:"args,omitempty"`
	Dir     string   `json:"dir,omitempty"`
	Env     []string `json:"env,omitempty"`      // what follows the first EnvKeep entries
	EnvKeep int      `json:"env_keep,omitempty"` // entries kept from the last spawn's environment
	Setsid  bool     `json:"setsid,omitempty"`   // a session of its own (with Setctty: stdin is its terminal)
	Setctty bool     `json:"setctty,omitempty"`  // else a process group of its own
	Clone   uintptr  `json:"clone,omitempty"`    // namespaces to start in (sandbox.SetNamespaces)
	Grace   int64    `json:"grace,omitempty"`    // hello: TERM-to-KILL grace in ns when the host is gone
	Root    string   `json:"root,omitempty"`     // root: the host's runtime root, removed when the host is gone

	// answers and reaping
	Pid    int    `json:"pid,omitempty"`
	Start  uint64 `json:"start,omitempty"` // started, adopted: the process's start token
	Errno  int    `json:"errno,omitempty"`
	Err    string `json:"err,omitempty"`
	Code   int    `json:"code,omitempty"`
	Signal int    `json:"signal,omitempty"`
	User   int64  `json:"user,omitempty"`   // exit: CPU time in user mode, ns
	System int64  `json:"system,omitempty"` // exit: CPU time in the kernel, ns
	MaxRSS int64  `json:"maxrss,omitempty"` // exit: the largest resident set, bytes

	files []*os.File // the descriptors that came with the message
}

// Operations.
const (
	opSpawn   = "spawn"   // host: start a tree; the message carries stdin, stdout, stderr
	opStarted = "started" // guard: the answer to a spawn (Pid, or Errno and Err)
	opExit    = "exit"    // guard: a leader exited (Code, Signal); it stays unreaped
	opReap    = "reap"    // host: reap the exited leader Pid
	opClose   = "close"   // host: end everything left and exit
	opHello   = "hello"   // host, first: the Grace to give the trees when the host is gone
	opRoot    = "root"    // host: the runtime root (Root) to remove when the host is gone
	opAdopted = "adopted" // guard: a process re-parented to it (Pid, Start)
	opLeft    = "left"    // guard: an adopted process it has reaped (Pid)
)

// chunk is the most one socket message carries: larger messages are sent in parts, each but
// the last marked with a leading 'M' (the last with 'E').
const chunk = 32 << 10

// send writes m, with files' descriptors attached to its first part.
func send(c *net.UnixConn, m *message, files []*os.File) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	var oob []byte
	if len(files) > 0 {
		fds := make([]int, len(files))
		for i, f := range files {
			fds[i] = int(f.Fd())
		}
		oob = unix.UnixRights(fds...)
	}
	for {
		part, more := b, byte('E')
		if len(b) > chunk {
			part, more = b[:chunk], 'M'
		}
		if _, _, err := c.WriteMsgUnix(append([]byte{more}, part...), oob, nil); err != nil {
			return err
		}
		b, oob = b[len(part):], nil
		if more == 'E' {
			return nil
		}
	}
}

// recv reads one message and the files that came with it.
func recv(c *net.UnixConn) (*message, []*os.File, error) {
	buf := make([]byte, chunk+1)
	oob := make([]byte, unix.CmsgSpace(4*8))
	var body []byte
	var files []*os.File
	for {
		n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
		if err != nil {
			closeAll(files)
			return nil, nil, err
		}
		if oobn > 0 {
			fs, err := parseRights(oob[:oobn])
			files = append(files, fs...)
			if err != nil {
				closeAll(files)
				return nil, nil, err
			}
		}
		if n == 0 {
			closeAll(files)
			return nil, nil, errors.New("guard: empty message: the other end is gone")
		}
		body = append(body, buf[1:n]...)
		if buf[0] == 'E' {
			break
		}
	}
	var m message
	if err := json.Unmarshal(body, &m); err != nil {
		closeAll(files)
		return nil, nil, fmt.Errorf("guard: bad message: %w", err)
	}
	return &m, files, nil
}

func parseRights(oob []byte) ([]*os.File, error) {
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil, err
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := unix.ParseUnixRights(&m)
		if err != nil {
			return files, err
		}
		for _, fd := range fds {
			unix.CloseOnExec(fd)
			files = append(files, os.NewFile(uintptr(fd), "stdio"))
		}
	}
	return files, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// socketPair returns the two ends of a new SOCK_SEQPACKET pair, close-on-exec.
func socketPair() (host, guard *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_SEQPACKET|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("guard: socketpair: %w", err)
	}
	return os.NewFile(uintptr(fds[0]), "guard-host"), os.NewFile(uintptr(fds[1]), "guard"), nil
}

// conn makes a *net.UnixConn of f (which it closes: the conn has a duplicate).
func conn(f *os.File) (*net.UnixConn, error) {
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		return nil, fmt.Errorf("guard: socket: %w", err)
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, fmt.Errorf("guard: socket is a %T, not a Unix socket", c)
	}
	return uc, nil
}
