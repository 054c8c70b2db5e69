package coderuntime_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/subkit/subkit/coderuntime"
	"github.com/subkit/subkit/sandbox"
	"github.com/subkit/subkit/subprocess"
)

// TestSandboxedCodeCannotMakeTheHostRead: confined code replaces the path of its error report
// with a symbolic link to a file it may not read (whose content would pass for a report), or
// with a FIFO no one writes, and then exits or raises. The host reads neither: the result
// carries nothing of the file, the call returns, and an exception the code raised is still
// reported.
func TestSandboxedCodeCannotMakeTheHostRead(t *testing.T) {
	for _, backend := range []sandbox.Backend{sandbox.Namespaces, sandbox.Landlock} {
		t.Run(string(backend), func(t *testing.T) { hostReadsNothing(t, backend) })
	}
}

func hostReadsNothing(t *testing.T, backend sandbox.Backend) {
	secretMark := "SECRET-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	secret := filepath.Join(t.TempDir(), "secret.json")
	require.NoError(t, os.WriteFile(secret, []byte(`{"name": "`+secretMark+`", "value": "`+secretMark+`", "traceback": "`+secretMark+`"}`), 0o600))
	rt := newRuntime(t, coderuntime.Config{ServiceConfig: subprocess.Config{Sandbox: &sandbox.Policy{Hidden: []string{secret}, Backend: backend}}})
	needs(t, rt, coderuntime.Python3)
	mark := marked(t)
	res, err := rt.Run(ctxT(t, time.Minute), coderuntime.Request{Language: coderuntime.Python3,
		Code: "try:\n    print(open(" + strconv.Quote(secret) + ").read())\nexcept OSError as e:\n    print(e)\n", Env: markEnv(mark)})
	if errors.Is(err, subprocess.ErrUnsupported) {
		t.Skipf("the %s sandbox backend does not work here: %v", backend, err)
	}
	require.NoError(t, err)
	require.NotNil(t, res.Sandbox)
	require.Equal(t, 0, res.ExitCode, "%+v", res)
	require.NotContains(t, res.Stdout.Tail, secretMark, "the file is hidden from the code")

	plants := map[string]string{
		"symlink": "os.symlink(" + strconv.Quote(secret) + ", report)\n",
		"fifo":    "os.mkfifo(report)\n",
	}
	ends := map[string]string{
		"exit":  "print('planted', flush=True)\nos._exit(3)\n",
		"raise": "print('planted', flush=True)\nraise RuntimeError('after planting')\n",
	}
	for pname, plant := range plants {
		for ename, end := range ends {
			t.Run(pname+"-"+ename, func(t *testing.T) {
				code := findReport + "try:\n    os.unlink(report)\nexcept OSError:\n    pass\n" + plant + end
				type outcome struct {
					res coderuntime.Result
					err error
				}
				done := make(chan outcome, 1)
				go func() {
					res, err := rt.Run(ctxT(t, time.Minute), coderuntime.Request{Language: coderuntime.Python3, Code: code, Env: markEnv(mark)})
					done <- outcome{res, err}
				}()
				var o outcome
				select {
				case o = <-done:
				case <-time.After(time.Minute): // only a host that opens the planted FIFO hangs
					t.Fatal("the run did not return: the host opened what the code planted")
				}
				require.NoError(t, o.err)
				assert.Equal(t, "planted\n", o.res.Stdout.Tail, "%+v", o.res)
				for _, s := range []string{o.res.Stdout.Tail, o.res.Stderr.Tail} {
					assert.NotContains(t, s, secretMark)
				}
				if ename == "exit" {
					assert.Equal(t, 3, o.res.ExitCode)
					assert.Nil(t, o.res.Error, "the code raised nothing")
					return
				}
				require.NotNil(t, o.res.Error, "the prelude's report survives: %+v", o.res)
				assert.Equal(t, coderuntime.CodeError{Name: "RuntimeError", Value: "after planting", Traceback: o.res.Error.Traceback}, *o.res.Error)
				assert.NotContains(t, o.res.Error.Traceback, secretMark)
			})
		}
	}
}
