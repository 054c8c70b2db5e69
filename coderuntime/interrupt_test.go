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

// An interrupt at any moment of a cell's life (while the cell is sent, while the driver
// receives or prepares it, mid-code, just before a blocking call, as it ends; for node also
// its synchronous part, where only SIGINT stops it, and where it awaits, where a message
// does) ends that cell, or is a no-op when the cell had ended: the interpreter is never
// restarted, the session keeps its state, and no interrupt reaches a later cell.
func TestSessionInterruptAnyMoment(t *testing.T) {
	type kind struct {
		code        func() string // what the cell runs after adding 1 to n
		prints      bool          // interrupted when its output arrives, not as soon as Run begins
		interrupted bool          // it never ends on its own
	}
	for _, lang := range []struct {
		name       coderuntime.Language
		init, add  string
		n          string // the expression that reads n
		cells      int
		kinds      []kind
		checkError func(t *testing.T, e *coderuntime.CodeError, msg string)
	}{{
		name: coderuntime.Python3, init: "n = 0\n", add: "n += 1\n", n: "n\n", cells: 60,
		kinds: []kind{
			{code: func() string { return "" }},
			{code: func() string { return "print('go')\n" }, prints: true},
			{code: func() string { return fmt.Sprintf("for i in range(%d): pass\n", rand.IntN(20000)) }},
			{code: func() string { return "import time\ntime.sleep(3600)\n" }, interrupted: true},
		},
		checkError: func(t *testing.T, e *coderuntime.CodeError, msg string) {
			require.Equal(t, "KeyboardInterrupt", e.Name, msg)
		},
	}, {
		name: coderuntime.Node, init: "globalThis.n = 0;\n", add: "globalThis.n += 1;\n", n: "globalThis.n\n", cells: 80,
		kinds: []kind{
			{code: func() string { return "" }},
			{code: func() string { return "console.log('go');\n" }, prints: true},
			{code: func() string { return fmt.Sprintf("for (let i = 0; i < %d; i++) {}\n", rand.IntN(2000000)) }},
			{code: func() string { return "await new Promise(() => {});\n" }, interrupted: true},
			{code: func() string { return "for (;;) {}\n" }, interrupted: true},
		},
		checkError: func(t *testing.T, e *coderuntime.CodeError, msg string) {
			require.Contains(t, e.Value, "interrupted by `SIGINT`", msg)
		},
	}} {
		t.Run(string(lang.name), func(t *testing.T) {
			rt := newRuntime(t, coderuntime.Config{})
			needs(t, rt, lang.name)
			mark := marked(t)
			s := session(t, rt, mark, coderuntime.SessionConfig{Language: lang.name, Grace: 10 * time.Second})
			okCell(t, s, lang.init)
			n := 0
			for i := range lang.cells {
				k := lang.kinds[i%len(lang.kinds)]
				code := lang.add + k.code()
				ctx, cancel := context.WithCancel(context.Background())
				cb := coderuntime.Callbacks{}
				if k.prints {
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
				if k.interrupted {
					require.NotNil(t, ex.Error, "cell %d %q ended without its interrupt: %+v", i, code, ex)
				}
				if ex.Error != nil {
					lang.checkError(t, ex.Error, fmt.Sprintf("cell %d %q: %+v", i, code, ex.Error))
				}
				// Whether the cell's n += 1 ran, the next cell tells; no interrupt reaches it.
				var m int
				_, err = fmt.Sscan(mainResult(t, okCell(t, s, lang.n)).MIME["text/plain"], &m)
				require.NoError(t, err)
				require.True(t, m == n || m == n+1, "cell %d: n is %d, was %d", i, m, n)
				n = m
			}
		})
	}
}
