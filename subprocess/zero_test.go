package subprocess_test

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/subkit/subkit/subprocess"
)

// zeroValues calls every exported method of zero and nil Handles and Services, and
// every context-taking method with a nil context, and checks that each one returns at once
// with an error wrapping ErrInvalid (or a zero value). It runs in a child process of the test
// (TestZeroValuesNeverPanic): a panic, even in a goroutine of the kit, fails it.
func zeroValues() {
	var bad []string
	expect := func(what string, err error) {
		if !errors.Is(err, subprocess.ErrInvalid) {
			bad = append(bad, fmt.Sprintf("%s: %v", what, err))
		}
	}
	var nilCtx context.Context
	ctx := context.Background()
	for name, h := range map[string]*subprocess.Handle{"zero Handle": {}, "nil Handle": nil} {
		_, err := h.Wait(ctx)
		expect(name+" Wait", err)
		expect(name+" WaitForExit", h.WaitForExit(ctx))
		expect(name+" Signal", h.Signal(os.Interrupt))
		expect(name+" Terminate", h.Terminate(ctx))
		_, err = h.Members(ctx)
		expect(name+" Members", err)
		_, err = h.ReadOutput(subprocess.Stdout, 0, 0)
		expect(name+" ReadOutput", err)
		_, err = h.WaitOutput(ctx, subprocess.Stdout, 0, 0)
		expect(name+" WaitOutput", err)
		_, err = h.Write([]byte("x"))
		expect(name+" Write", err)
		expect(name+" Resize", h.Resize(80, 24))
		_, err = h.Foreground(ctx)
		expect(name+" Foreground", err)
		expect(name+" SignalForeground", h.SignalForeground(ctx, os.Interrupt))
		expect(name+" Close", h.Close())
		expect(name+" Close again", h.Close())
		if h.Pid() != 0 || h.Argv() != nil || h.Stdin() != nil || h.Stdout() != nil || h.Stderr() != nil ||
			h.SpillDir() != "" || h.Updated(subprocess.Stdout) != nil || h.Sandbox() != nil || h.Identity().Pid != 0 {
			bad = append(bad, name+": accessors not zero")
		}
		select {
		case <-h.Done(): // closed already
		default:
			bad = append(bad, name+" Done blocks")
		}
	}
	for name, s := range map[string]*subprocess.Service{"zero Service": {}, "nil Service": nil} {
		_, err := s.Spawn(ctx, subprocess.Spec{Path: "true"})
		expect(name+" Spawn", err)
		_, err = s.Spawn(ctx, subprocess.Spec{Path: "true", TTY: &subprocess.TTY{}})
		expect(name+" Spawn TTY", err)
		_, err = s.ResolveExecutable("true")
		expect(name+" ResolveExecutable", err)
		expect(name+" Close", s.Close())
		expect(name+" Shutdown", s.Shutdown(ctx))
		if s.Cwd() != "" || s.RuntimeRoot() != "" || s.Env() != nil {
			bad = append(bad, name+": accessors not zero")
		}
	}
	// A nil context given to a real Service and Handle.
	svc, err := subprocess.New(subprocess.Config{})
	if err != nil {
		fmt.Println("new:", err)
		os.Exit(1)
	}
	_, err = svc.Spawn(nilCtx, subprocess.Spec{Path: "true"})
	expect("Spawn(nil ctx)", err)
	_, err = svc.Spawn(nilCtx, subprocess.Spec{Path: "true", TTY: &subprocess.TTY{}})
	expect("Spawn TTY(nil ctx)", err)
	h, err := svc.Spawn(ctx, subprocess.Spec{Path: "true"})
	if err != nil {
		fmt.Println("spawn:", err)
		os.Exit(1)
	}
	_, err = h.Wait(nilCtx)
	expect("Wait(nil ctx)", err)
	expect("WaitForExit(nil ctx)", h.WaitForExit(nilCtx))
	expect("Terminate(nil ctx)", h.Terminate(nilCtx))
	_, err = h.Members(nilCtx)
	expect("Members(nil ctx)", err)
	_, err = h.Foreground(nilCtx)
	expect("Foreground(nil ctx)", err)
	expect("SignalForeground(nil ctx)", h.SignalForeground(nilCtx, os.Interrupt))
	expect("Shutdown(nil ctx)", svc.Shutdown(nilCtx))
	h.Close()
	if err := svc.Close(); err != nil {
		bad = append(bad, "close: "+err.Error())
	}
	if len(bad) > 0 {
		for _, b := range bad {
			fmt.Println(b)
		}
		os.Exit(1)
	}
	fmt.Println("zero values: ok")
}
