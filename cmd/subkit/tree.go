package main

import (
	"context"
	"io"
)

func cmdTree(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return exitFailure
}
