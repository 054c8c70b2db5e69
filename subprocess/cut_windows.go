package subprocess

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/windows"

	"github.com/subkit/subkit/internal/backoff"
)

// On Windows the ends of os.Pipe are not pollable (Go 1.26): SetReadDeadline returns
// os.ErrNoDeadline, so the deadline cut of the other platforms does nothing, and a pump would
// stay blocked in ReadFile for as long as anything holds the write end. The cut cancels the
// blocked read instead.
func cut(r *os.File) error {
	err := r.SetReadDeadline(time.Unix(1, 0))
	if errors.Is(err, os.ErrNoDeadline) {
		return cancelPipeRead(r)
	}
	return err
}

// cancelBackoff spaces the repeated cancels of cancelPipeRead.
var cancelBackoff = backoff.Policy{Max: 50 * time.Millisecond}

// cancelPipeRead makes the pump blocked on r return. It cancels the pending ReadFile with
// CancelIoEx, which the pump takes as the end of its stream, and goes on cancelling until the
// pump has closed r: a cancel that lands between two reads finds nothing, and the next read
// would block again. A read that finds bytes in the pipe completes at once and is never
// pending, so what the pipe holds when the cut comes is still read, as on the other
// platforms. It returns at once, with the error of the first cancel when even that one could
// not be made; r already closed is os.ErrClosed.
func cancelPipeRead(r *os.File) error {
	rc, err := r.SyscallConn()
	if err != nil {
		return err
	}
	if err := cancelIO(rc); err != nil {
		return err
	}
	go func() {
		// The pump closing r ends the loop (or cancelling having become impossible); nothing
		// else does, so the context has no deadline.
		backoff.Until(context.Background(), cancelBackoff, func() (bool, error) {
			return cancelIO(rc) != nil, nil
		})
	}()
	return nil
}

// cancelIO cancels the I/O pending on rc's handle, if any. The handle stays open during the
// call (Control holds a reference to it), so the number is never one the process has reused
// for another file. It fails with os.ErrClosed once the pump has closed the file.
func cancelIO(rc syscall.RawConn) error {
	var cerr error
	if rc.Control(func(fd uintptr) { cerr = windows.CancelIoEx(windows.Handle(fd), nil) }) != nil {
		return os.ErrClosed // Control fails only on a closed file
	}
	if cerr == nil || errors.Is(cerr, windows.ERROR_NOT_FOUND) { // ERROR_NOT_FOUND: no read pending now
		return nil
	}
	return fmt.Errorf("cancel the read of a pipe (CancelIoEx): %w", cerr)
}
