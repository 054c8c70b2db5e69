package subprocess

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/internal/posix"
)

func isBlocking(t *testing.T, f *os.File) bool {
	t.Helper()
	var flags int
	var ferr error
	require.NoError(t, posix.WithFd(f, func(fd int) { flags, ferr = unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0) }))
	require.NoError(t, ferr)
	return flags&unix.O_NONBLOCK == 0
}

func TestPtyMasterStaysBlocking(t *testing.T) {
	ptm, tty, err := pty.Open()
	require.NoError(t, err)
	defer tty.Close()
	require.True(t, isBlocking(t, ptm), "creack/pty hands out a blocking master")

	m, err := ptyMaster(ptm)
	require.NoError(t, err)
	defer m.Close()
	assert.Same(t, ptm, m, "a blocking master is kept as it is")
	assert.True(t, isBlocking(t, m))
	assert.True(t, errors.Is(m.SetReadDeadline(time.Now()), os.ErrNoDeadline), "not in the runtime poller")

	require.NoError(t, setSize(m, 100, 30))
	assert.True(t, isBlocking(t, m), "a resize through posix.WithFd keeps the mode")

	_, err = tty.Write([]byte("x\n"))
	require.NoError(t, err)
	buf := make([]byte, 16)
	n, err := m.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "x\r\n", string(buf[:n]))
}

func TestPtyMasterMadeBlocking(t *testing.T) {
	ptm, tty, err := pty.Open()
	require.NoError(t, err)
	defer tty.Close()
	defer ptm.Close()
	// As a creack/pty that handed out a non-blocking master would: a file in the poller.
	var fd int
	var derr error
	require.NoError(t, posix.WithFd(ptm, func(raw int) { fd, derr = unix.Dup(raw) }))
	require.NoError(t, derr)
	require.NoError(t, unix.SetNonblock(fd, true))
	nb := os.NewFile(uintptr(fd), "/dev/ptmx")
	require.False(t, isBlocking(t, nb))

	m, err := ptyMaster(nb)
	require.NoError(t, err)
	defer m.Close()
	assert.NotSame(t, nb, m)
	assert.True(t, isBlocking(t, m))
	assert.True(t, errors.Is(m.SetReadDeadline(time.Now()), os.ErrNoDeadline), "not in the runtime poller")
	assert.True(t, isBlocking(t, ptm), "the mode belongs to the open file the duplicates share")
}
