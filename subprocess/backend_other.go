//go:build !unix && !windows

package subprocess

import (
	"context"
	"os/exec"
)

// otherBackend serves platforms without process trees; Spawn refuses them with ErrUnsupported
// (see the platform table) before the backend is used.
type otherBackend struct{}

func newBackend(Config) (backend, error) { return otherBackend{}, nil }

func (otherBackend) start(cmd *exec.Cmd) error                  { return ErrUnsupported }
func (otherBackend) startError(error) (kind error, hint string) { return nil, "" }
func (otherBackend) sweep(context.Context) error                { return nil }
func (otherBackend) close()                                     {}
func (otherBackend) envRules() envRules                         { return envRules{} }
func (otherBackend) pathRules() pathRules                       { return pathRules{listSep: ":"} }
func (otherBackend) prepare(cmd *exec.Cmd)                      {}
func (otherBackend) attach(cmd *exec.Cmd) (tree, error)         { return nil, ErrUnsupported }
