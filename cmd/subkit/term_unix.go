//go:build unix

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/subprocess"
)

// interactive passes this terminal through to a program on a pty of its own.
func interactive(ctx context.Context, svc *subprocess.Service, spec subprocess.Spec, stdin io.Reader, stdout, stderr io.Writer) int {
	in, isFile := stdin.(*os.File)
	fd := -1
	if isFile {
		fd = int(in.Fd())
	}
	if ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err == nil && fd >= 0 {
		if spec.TTY.Cols == 0 {
			spec.TTY.Cols = int(ws.Col)
		}
		if spec.TTY.Rows == 0 {
			spec.TTY.Rows = int(ws.Row)
		}
	}
	term, err := svc.Spawn(ctx, spec)
	if err != nil {
		kind, code := startFailure(err)
		return reportError(stdout, stderr, false, "term", kind, code, err)
	}
	defer term.Close()
	if saved, err := unix.IoctlGetTermios(fd, ioctlGetTermios); err == nil && fd >= 0 {
		raw := *saved
		raw.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
		raw.Oflag &^= unix.OPOST
		raw.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
		raw.Cflag &^= unix.CSIZE | unix.PARENB
		raw.Cflag |= unix.CS8
		raw.Cc[unix.VMIN], raw.Cc[unix.VTIME] = 1, 0
		if unix.IoctlSetTermios(fd, ioctlSetTermios, &raw) == nil {
			defer unix.IoctlSetTermios(fd, ioctlSetTermios, saved)
		}
	}
	winch := make(chan os.Signal, 1)
	signal.Notify(winch, syscall.SIGWINCH)
	defer signal.Stop(winch)

	// Keys: a terminal stdin is read through a non-blocking duplicate, so the copy can be
	// stopped when the program exits; blocking mode is restored for the caller's shell.
	keys := stdin
	var nb *os.File
	if fd >= 0 {
		if f, err := nonblocking(fd); err == nil {
			nb, keys = f, f
		}
	}
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		io.Copy(writerFunc(term.Write), keys)
	}()
	if nb != nil {
		defer func() {
			nb.SetReadDeadline(time.Unix(1, 0))
			<-copied
			nb.Close()
			unix.SetNonblock(fd, false)
		}()
	}
	var next int64
	for {
		updated := term.Updated(subprocess.Stdout)
		d, err := term.ReadOutput(subprocess.Stdout, next, 0)
		if err == nil {
			stdout.Write(d.Data)
			next = d.Next
			if d.Done {
				break
			}
		}
		select {
		case <-updated:
		case <-winch:
			if ws, err := unix.IoctlGetWinsize(fd, unix.TIOCGWINSZ); err == nil {
				term.Resize(int(ws.Col), int(ws.Row))
			}
		case <-ctx.Done():
			term.Terminate(context.Background())
		}
	}
	res, err := term.Wait(context.Background())
	if err != nil {
		fmt.Fprintf(stderr, "subkit: %v\n", err)
		return exitFailure
	}
	if ctx.Err() != nil {
		return exitCancelled
	}
	if res.Signal != "" {
		return exitSignalShift + signalNumber(res.Signal)
	}
	return res.ExitCode
}

// nonblocking returns a duplicate of fd in non-blocking mode, read through the runtime
// poller so a read deadline can stop it.
func nonblocking(fd int) (*os.File, error) {
	nfd, err := unix.Dup(fd)
	if err != nil {
		return nil, err
	}
	unix.CloseOnExec(nfd)
	if err := unix.SetNonblock(nfd, true); err != nil {
		unix.Close(nfd)
		return nil, err
	}
	return os.NewFile(uintptr(nfd), "stdin"), nil
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
