package sandbox

import (
	"bytes"
	"errors"
	"io"
	"os/exec"
	"syscall"
	"testing"

	"github.com/creack/pty"
	"github.com/stretchr/testify/require"
)

// TestTerminal: a program on a pty the host opened works inside the sandbox: its stdin is a
// terminal, it can read the window size, write to /dev/tty and open a pty of its own.
func TestTerminal(t *testing.T) {
	for _, v := range variants(t) {
		t.Run(v.name, func(t *testing.T) {
			w := newWorld(t)
			prog := w.sh(`test -t 0 && echo is-a-tty; stty size; stty size </dev/tty; echo via-dev-tty >/dev/tty;
script -qec 'echo inner-pty' /dev/null`)
			prog.Terminal = true
			l := v.prepare(t, Policy{}, prog)
			master, tty, err := pty.Open()
			require.NoError(t, err)
			defer master.Close()
			require.NoError(t, pty.Setsize(master, &pty.Winsize{Rows: 31, Cols: 97}))
			cmd := exec.CommandContext(t.Context(), l.Path)
			cmd.Args, cmd.Env, cmd.Dir = l.Args, l.Env, w.work
			cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
			cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
			SetNamespaces(cmd.SysProcAttr, l.Cloneflags)
			require.NoError(t, cmd.Start())
			require.NoError(t, tty.Close())
			var out bytes.Buffer
			_, err = io.Copy(&out, master) // ends with EIO once the session has closed the tty
			if !errors.Is(err, syscall.EIO) {
				require.NoError(t, err)
			}
			got := out.String()
			require.Contains(t, got, "is-a-tty")
			require.Contains(t, got, "31 97\r\n31 97\r\n")
			require.Contains(t, got, "via-dev-tty")
			if v.backend == Landlock {
				// Without a devpts of its own, no pty can be opened by path: not the host's
				// other terminals, and not one the program makes (openpty opens it by name).
				require.Error(t, cmd.Wait(), "%q", got)
				require.Contains(t, got, "failed to create pseudo-terminal")
				return
			}
			require.NoError(t, cmd.Wait(), "%q", got)
			require.Contains(t, got, "inner-pty")
		})
	}
}
