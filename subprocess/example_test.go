//go:build unix

package subprocess_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/subkit/subkit/subprocess"
)

func Example() {
	svc, err := subprocess.New(subprocess.Config{})
	if err != nil {
		panic(err)
	}
	defer svc.Close()

	h, err := svc.Spawn(context.Background(), subprocess.Spec{
		Path: "bash", Args: []string{"-c", "echo hello; echo oops >&2; exit 3"},
	})
	if err != nil {
		panic(err)
	}
	defer h.Close()
	res, err := h.Wait(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Printf("exit %d, stdout %q, stderr %q\n", res.ExitCode, res.Stdout.Tail, res.Stderr.Tail)
	// Output: exit 3, stdout "hello\n", stderr "oops\n"
}

// A program on a terminal of its own (Spec.TTY) finds a terminal on its stdio; the Handle
// reads what it writes there as the Stdout stream.
func ExampleTTY() {
	svc, err := subprocess.New(subprocess.Config{})
	if err != nil {
		panic(err)
	}
	defer svc.Close()

	h, err := svc.Spawn(context.Background(), subprocess.Spec{
		Path: "bash", Args: []string{"-c", `[ -t 0 ] && echo "a terminal of $(stty size)"`},
		TTY: &subprocess.TTY{Cols: 100, Rows: 40},
	})
	if err != nil {
		panic(err)
	}
	defer h.Close()
	res, err := h.Wait(context.Background())
	if err != nil {
		panic(err)
	}
	d, err := h.ReadOutput(subprocess.Stdout, 0, 0)
	if err != nil {
		panic(err)
	}
	fmt.Printf("exit %d: %q\n", res.ExitCode, d.Data)
	// Output: exit 0: "a terminal of 40 100\r\n"
}

// A daemon started in the background keeps the shell's stdout open; the result still settles
// once the shell has exited and the grace has run out, and Terminate ends the daemon.
func ExampleHandle_Terminate() {
	svc, _ := subprocess.New(subprocess.Config{})
	defer svc.Close()
	h, _ := svc.Spawn(context.Background(), subprocess.Spec{
		Path: "bash", Args: []string{"-c", "sleep 1000 & echo started"},
		Grace: 100 * time.Millisecond,
	})
	defer h.Close()
	res, _ := h.Wait(context.Background())
	fmt.Printf("%q pipes held: %v\n", res.Stdout.Tail, res.PipesHeld)
	fmt.Println(h.Terminate(context.Background()), h.WaitForExit(context.Background()))
	// Output:
	// "started\n" pipes held: true
	// <nil> <nil>
}

// Offset reads address the whole stream; the Service keeps no cursor.
func ExampleHandle_ReadOutput() {
	svc, _ := subprocess.New(subprocess.Config{})
	defer svc.Close()
	h, _ := svc.Spawn(context.Background(), subprocess.Spec{
		Path: "seq", Args: []string{"1", "5"},
		Stdout: subprocess.Output{TailBytes: 4}, // keeps "4\n5\n"
	})
	defer h.Close()
	h.Wait(context.Background())
	d, _ := h.ReadOutput(subprocess.Stdout, 0, 0)
	fmt.Printf("asked 0, got %q from %d, %d dropped, next %d\n", d.Data, d.From, d.Dropped, d.Next)
	// Output: asked 0, got "4\n5\n" from 6, 6 dropped, next 10
}

// Run spawns, waits and closes in one call; a failed program is Result.Err, and Usage says what
// it consumed.
func ExampleRun() {
	svc, _ := subprocess.New(subprocess.Config{})
	defer svc.Close()
	res, err := subprocess.Run(context.Background(), svc, subprocess.Spec{
		Path: "python3", Args: []string{"-c", "b = bytearray(64 << 20); print(len(b))"},
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s: success %v, at least 64 MiB resident: %v\n", bytes.TrimSpace(res.Stdout.Tail), res.Success(), res.Usage.MaxRSS >= 64<<20)

	res, _ = subprocess.Run(context.Background(), svc, subprocess.Spec{Path: "bash", Args: []string{"-c", "exit 3"}})
	var ee *subprocess.ExitError
	fmt.Println(res.Err(), errors.As(res.Err(), &ee))
	// Output:
	// 67108864: success true, at least 64 MiB resident: true
	// exit status 3 true
}

// A collected stream can also be teed to a Writer (a log, a progress view) while its tail and
// spill are kept.
func ExampleOutput_tee() {
	svc, _ := subprocess.New(subprocess.Config{})
	defer svc.Close()
	var log bytes.Buffer // written by the tee's own goroutine; read here after the result
	res, _ := subprocess.Run(context.Background(), svc, subprocess.Spec{
		Path: "seq", Args: []string{"1", "5"},
		Stdout: subprocess.Output{TailBytes: 4, Tee: &log},
	})
	fmt.Printf("tail %q, tee %q, dropped %d\n", res.Stdout.Tail, log.String(), res.Stdout.TeeDropped)
	// Output: tail "4\n5\n", tee "1\n2\n3\n4\n5\n", dropped 0
}

// WaitOutput follows a running process: each call returns what arrived past the last offset,
// and never misses a write.
func ExampleHandle_WaitOutput() {
	svc, _ := subprocess.New(subprocess.Config{})
	defer svc.Close()
	h, _ := svc.Spawn(context.Background(), subprocess.Spec{
		Path: "bash", Args: []string{"-c", "for i in 1 2 3; do echo line $i; sleep 0.01; done"},
	})
	defer h.Close()
	var got []byte
	for next := int64(0); ; {
		d, err := h.WaitOutput(context.Background(), subprocess.Stdout, next, 0)
		if err != nil {
			panic(err)
		}
		got, next = append(got, d.Data...), d.Next
		if d.Done {
			break
		}
	}
	fmt.Printf("%s", got)
	// Output:
	// line 1
	// line 2
	// line 3
}
