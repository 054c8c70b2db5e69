//go:build unix && !linux

package guard

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/subkit/subkit/internal/posix"
	"github.com/subkit/subkit/procinspect"
)

// RoleVar names the environment variable that makes a helper binary act as a guard.
const (
	RoleVar   = "SUBKIT_HELPER"
	RoleGuard = "guard"
)

// ErrGone is wrapped by the errors of a Client whose guard has exited.
var ErrGone = errors.New("the guard process is gone")

var errNoGuard = fmt.Errorf("guard: no guard on %s (it needs Linux's child subreaper): %w", runtime.GOOS, errors.ErrUnsupported)

// Client is the host's end of a guard; there is none on this OS.
type Client struct{}

// Request is one tree for the guard to start.
type Request struct {
	Path, Dir string
	Args, Env []string
	Stdio     [3]*os.File
	Setsid    bool
	Setctty   bool
	Clone     uintptr
}

// Leader is a tree's leader as the guard holds it.
type Leader struct{}

func Start(path string, env []string, grace time.Duration, start func(*exec.Cmd) error) (*Client, error) {
	return nil, errNoGuard
}
func Serve(sock *os.File) int                                           { return 3 }
func (c *Client) Done() <-chan struct{}                                 { return nil }
func (c *Client) Err() error                                            { return errNoGuard }
func (c *Client) Adopted() []procinspect.Identity                       { return nil }
func (c *Client) Spawn(ctx context.Context, r Request) (*Leader, error) { return nil, errNoGuard }
func (c *Client) Close(ctx context.Context) error                       { return nil }
func (c *Client) SetRoot(root string) error                             { return errNoGuard }
func (l *Leader) Pid() int                                              { return 0 }
func (l *Leader) Wait() (posix.Exit, bool, error)                       { return posix.Exit{Code: -1}, true, errNoGuard }
func (l *Leader) Reap() error                                           { return nil }
