//go:build !unix

package main

import (
	"context"
	"io"

	"github.com/subkit/subkit/subprocess"
)

func interactive(ctx context.Context, svc *subprocess.Service, spec subprocess.Spec, stdin io.Reader, stdout, stderr io.Writer) int {
	_, err := svc.Spawn(ctx, spec)
	kind, code := startFailure(err)
	return reportError(stdout, stderr, false, "term", kind, code, err)
}
