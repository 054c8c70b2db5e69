//go:build unix

package coderuntime_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/coderuntime"
)

// An interrupt at any moment of a python3 cell's life (while the cell is sent, while the
// driver receives or prepares it, mid-code, just before a blocking call, as it ends) ends the
// cell with KeyboardInterrupt, or is a no-op when the cell had ended: the interpreter is never
// restarted and the session keeps its state.
func TestSessionPythonInterruptAnyMoment(t *testing.T) {
	rt := newRuntime(t, coderuntime.Config{})
	needs(t, rt, coderuntime.Python3)
	mark := marked(t)
	s := session(t, rt, mark, coderuntime.SessionConfig{Language: coderuntime.Python3, Grace: 10 * time.Second})
	okCell(t, s, "n = 0\n")
	n := 0
	for i := range 60 {
		// Every cell adds 1 to n, then: ends at once; prints, and is interrupted when its
		// output arrives; spins a little; sleeps until interrupted. All but the printing
		// ones are interrupted as soon as Run begins.
		code := "n += 1\n"
		switch i % 4 {
		case 1:
			code += "print('go')\n"
		case 2:
			code += fmt.Sprintf("for i in range(%d): pass\n", rand.IntN(20000))
		case 3:
			code += "import time\ntime.sleep(3600)\n"
		}
		ctx, cancel := context.WithCancel(context.Background())
		cb := coderuntime.Callbacks{}
		if i%4 == 1 {
			cb.Stdout = func(string) { cancel() }
		} else {
			go cancel()
		}
		ex, err := s.Run(ctx, coderuntime.Cell{Code: code, Timeout: time.Minute}, cb)
		cancel()
		if err != nil { // ctx ended before the cell started: nothing ran
			continue
		}
		require.False(t, ex.Restarted, "cell %d %q: the interpreter was restarted (%+v): %+v", i, code, ex.InterpreterExit, ex)
		if i%4 == 3 {
			require.NotNil(t, ex.Error, "cell %d %q ended without its interrupt: %+v", i, code, ex)
		}
		if ex.Error != nil {
			require.Equal(t, "KeyboardInterrupt", ex.Error.Name, "cell %d %q: %+v", i, code, ex.Error)
		}
		// Whether the cell's n += 1 ran, the next cell tells.
		var m int
		_, err = fmt.Sscan(mainResult(t, okCell(t, s, "n\n")).MIME["text/plain"], &m)
		require.NoError(t, err)
		require.True(t, m == n || m == n+1, "cell %d: n is %d, was %d", i, m, n)
		n = m
	}
}

// The same for node: an interrupt at any moment of a cell (its synchronous part, where only
// SIGINT stops it, or where it awaits, where a message does) ends that cell only: the
// interpreter is never restarted, and no interrupt reaches a later cell.
func TestSessionNodeInterruptAnyMoment(t *testing.T) {
	rt := newRuntime(t, coderuntime.Config{})
	needs(t, rt, coderuntime.Node)
	mark := marked(t)
	s := session(t, rt, mark, coderuntime.SessionConfig{Language: coderuntime.Node, Grace: 10 * time.Second})
	okCell(t, s, "globalThis.n = 0;\n")
	n := 0
	for i := range 80 {
		// Every cell adds 1 to n, then: ends at once; prints, and is interrupted when its
		// output arrives; spins a little; awaits forever; spins forever. All but the printing
		// ones are interrupted as soon as Run begins.
		code := "globalThis.n += 1;\n"
		switch i % 5 {
		case 1:
			code += "console.log('go');\n"
		case 2:
			code += fmt.Sprintf("for (let i = 0; i < %d; i++) {}\n", rand.IntN(2000000))
		case 3:
			code += "await new Promise(() => {});\n"
		case 4:
			code += "for (;;) {}\n"
		}
		ctx, cancel := context.WithCancel(context.Background())
		cb := coderuntime.Callbacks{}
		if i%5 == 1 {
			cb.Stdout = func(string) { cancel() }
		} else {
			go cancel()
		}
		ex, err := s.Run(ctx, coderuntime.Cell{Code: code, Timeout: time.Minute}, cb)
		cancel()
		if err != nil { // ctx ended before the cell started: nothing ran
			continue
		}
		require.False(t, ex.Restarted, "cell %d %q: the interpreter was restarted (%+v): %+v", i, code, ex.InterpreterExit, ex)
		if i%5 >= 3 {
			require.NotNil(t, ex.Error, "cell %d %q ended without its interrupt: %+v", i, code, ex)
		}
		if ex.Error != nil {
			require.Contains(t, ex.Error.Value, "interrupted by `SIGINT`", "cell %d %q: %+v", i, code, ex.Error)
		}
		// Whether the cell's n += 1 ran, the next cell tells; no interrupt reaches it.
		var m int
		_, err = fmt.Sscan(mainResult(t, okCell(t, s, "globalThis.n\n")).MIME["text/plain"], &m)
		require.NoError(t, err)
		require.True(t, m == n || m == n+1, "cell %d: n is %d, was %d", i, m, n)
		n = m
	}
}
