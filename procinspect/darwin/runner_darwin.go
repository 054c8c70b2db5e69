//go:build darwin

package darwin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"golang.org/x/sys/unix"
)

// ErrNotFound is wrapped by Lookup's error when ps reports no such process.
var ErrNotFound = errors.New("procinspect/darwin: no such process")

// Snapshot runs ps once for every process and returns its records, with Sid
// filled in by getsid(2) (see the package documentation). The context bounds
// the ps run.
func Snapshot(ctx context.Context) ([]Record, error) {
	out, err := run(ctx, Args())
	if err != nil {
		return nil, err
	}
	recs, err := Parse(out)
	if err != nil {
		return nil, fmt.Errorf("procinspect/darwin: snapshot: %w", err)
	}
	fillSessions(recs)
	return recs, nil
}

// Lookup runs ps for one pid. When ps lists nothing (the process does not
// exist) the error wraps ErrNotFound.
func Lookup(ctx context.Context, pid int) (Record, error) {
	if pid < 0 {
		return Record{}, fmt.Errorf("procinspect/darwin: lookup pid %d: %w", pid, ErrNotFound)
	}
	out, err := run(ctx, Args(pid))
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) && len(bytes.TrimSpace(out)) == 0 {
		// ps -p exits 1 with no output when no process matched.
		return Record{}, fmt.Errorf("procinspect/darwin: lookup pid %d: %w", pid, ErrNotFound)
	}
	if err != nil {
		return Record{}, err
	}
	recs, err := Parse(out)
	if err != nil {
		return Record{}, fmt.Errorf("procinspect/darwin: lookup pid %d: %w", pid, err)
	}
	for _, r := range recs {
		if r.Pid == pid {
			one := []Record{r}
			fillSessions(one)
			return one[0], nil
		}
	}
	return Record{}, fmt.Errorf("procinspect/darwin: lookup pid %d: %w", pid, ErrNotFound)
}

// run executes ps with args and returns its standard output. A failure names
// the command and carries ps's standard error.
func run(ctx context.Context, args []string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, PsPath, args...)
	cmd.Env = Env()
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if ctx.Err() != nil {
			err = ctx.Err()
		}
		if msg != "" {
			return stdout.Bytes(), fmt.Errorf("procinspect/darwin: %s %s: %w (stderr: %s)", PsPath, strings.Join(args, " "), err, msg)
		}
		return stdout.Bytes(), fmt.Errorf("procinspect/darwin: %s %s: %w", PsPath, strings.Join(args, " "), err)
	}
	return stdout.Bytes(), nil
}

// fillSessions sets each record's Sid with getsid(2), leaving -1 where the
// call fails.
func fillSessions(recs []Record) {
	for i := range recs {
		if recs[i].Pid <= 0 {
			continue // getsid(0) would answer for the caller
		}
		if sid, err := unix.Getsid(recs[i].Pid); err == nil {
			recs[i].Sid = sid
		}
	}
}
