//go:build unix

package subprocess_test

import (
	"context"
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
