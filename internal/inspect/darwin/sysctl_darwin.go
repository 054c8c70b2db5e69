//go:build darwin

package darwin

import (
	"context"
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Snapshot reads every process with one sysctl kern.proc.all (see the package
// documentation) and fills each record's Sid with getsid(2). The context is checked
// before the read; the read itself does not block.
func Snapshot(ctx context.Context) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("procinspect/darwin: snapshot: %w", err)
	}
	recs, err := read("kern.proc.all")
	if err != nil {
		return nil, fmt.Errorf("procinspect/darwin: snapshot: %w", err)
	}
	if err := FillSessions(recs, unix.Getsid, isGone); err != nil {
		return nil, fmt.Errorf("procinspect/darwin: snapshot: %w", err)
	}
	return recs, nil
}

// Lookup reads one process with sysctl kern.proc.pid.<pid> and fills its Sid. A process
// that does not exist gives an error wrapping ErrNotFound; a zombie is returned like any
// process.
func Lookup(ctx context.Context, pid int) (Record, error) {
	r, err := lookup(ctx, pid)
	if err != nil {
		return Record{}, err
	}
	one := []Record{r}
	if err := FillSessions(one, unix.Getsid, isGone); err != nil {
		return Record{}, fmt.Errorf("procinspect/darwin: lookup pid %d: %w", pid, err)
	}
	return one[0], nil
}

// Alive reports whether pid is a live (not zombie) process with start token start, from
// one sysctl kern.proc.pid.<pid>. A process that does not exist is not alive: the error
// is nil then.
func Alive(ctx context.Context, pid int, start uint64) (bool, error) {
	r, err := lookup(ctx, pid)
	if errors.Is(err, ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return r.Is(start), nil
}

func lookup(ctx context.Context, pid int) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, fmt.Errorf("procinspect/darwin: lookup pid %d: %w", pid, err)
	}
	if pid < 0 {
		return Record{}, fmt.Errorf("procinspect/darwin: lookup pid %d: %w", pid, ErrNotFound)
	}
	recs, err := read("kern.proc.pid", pid)
	if err != nil {
		return Record{}, fmt.Errorf("procinspect/darwin: lookup pid %d: %w", pid, err)
	}
	return Pick(recs, pid)
}

// read runs one sysctl of the kern.proc family and decodes what it returned. The records
// arrive as x/sys's KinfoProc structs; Decode reads their bytes at offsets that
// layout_darwin.go checks against that type when this file is built.
func read(name string, args ...int) ([]Record, error) {
	kps, err := unix.SysctlKinfoProcSlice(name, args...)
	if err != nil {
		return nil, &SysctlError{Name: name, Args: args, Err: err}
	}
	if len(kps) == 0 {
		return nil, nil
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(&kps[0])), len(kps)*int(unsafe.Sizeof(kps[0])))
	return Decode(b)
}

// isGone reports whether getsid's error means the process no longer exists.
func isGone(err error) bool { return errors.Is(err, unix.ESRCH) }
