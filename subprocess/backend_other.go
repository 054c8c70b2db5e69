//go:build !unix && !windows

package subprocess

import (
	"context"
	"errors"
	"os/exec"
)

// otherBackend serves platforms without process trees; Spawn refuses them with ErrUnsupported
// (see the platform table) before the backend is used.
type otherBackend struct{}

func newBackend(cfg Config) (backend, error) {
	if cfg.Guard {
		return nil, &Error{Op: "new service", Name: "Guard", Kind: ErrUnsupported, Err: errors.New("no guard on " + platformName)}
	}
	return otherBackend{}, nil
}

func (otherBackend) start(cmd *exec.Cmd) (tree, int, error)     { return nil, 0, ErrUnsupported }
func (otherBackend) startError(error) (kind error, hint string) { return nil, "" }
func (otherBackend) sweep(context.Context) error                { return nil }
func (otherBackend) close(context.Context) error                { return nil }
func (otherBackend) guardState() (lost, next <-chan struct{}, endAdopted func(context.Context) error) {
	return nil, nil, nil
}
func (otherBackend) envRules() envRules    { return envRules{} }
func (otherBackend) pathRules() pathRules  { return pathRules{listSep: ":"} }
func (otherBackend) prepare(cmd *exec.Cmd) {}

func (otherBackend) setRoot(string) error { return nil }
