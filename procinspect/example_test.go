//go:build linux || darwin

package procinspect_test

import (
	"context"
	"fmt"
	"os"

	"github.com/subkit/subkit/procinspect"
)

// Look up the current process and check it is alive under its exact identity.
func ExampleLookup() {
	ctx := context.Background()
	self, err := procinspect.Lookup(ctx, os.Getpid())
	if err != nil {
		fmt.Println(err)
		return
	}
	alive, err := procinspect.Alive(ctx, self.Identity)
	fmt.Println(self.Pid == os.Getpid(), self.PPid == os.Getppid(), alive, err)
	// Output: true true true <nil>
}

// Take one snapshot and walk from the current process up to its parent.
func ExampleSnapshot() {
	tab, err := procinspect.Snapshot(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	self, ok := tab.Get(os.Getpid())
	fmt.Println("found self:", ok)
	parent, ok := tab.Get(self.PPid)
	fmt.Println("found parent:", ok)
	isChild := false
	for _, c := range tab.Children(parent.Identity) {
		isChild = isChild || c.Pid == self.Pid
	}
	fmt.Println("self is a child of parent:", isChild)
	// Output:
	// found self: true
	// found parent: true
	// self is a child of parent: true
}

// A pid that names no process is not alive, and that is not an error.
func ExampleAlive() {
	ctx := context.Background()
	alive, err := procinspect.Alive(ctx, procinspect.Identity{Pid: 1 << 30, Start: 1})
	fmt.Println(alive, err)
	// Output: false <nil>
}

// Descendants walks ppid links from an exact root, dropping any "child" that
// started before its parent (it belonged to an earlier holder of the pid).
func ExampleTable_Descendants() {
	tab := procinspect.NewTable([]procinspect.Proc{
		{Identity: procinspect.Identity{Pid: 10, Start: 100}, PPid: 1},
		{Identity: procinspect.Identity{Pid: 11, Start: 150}, PPid: 10},
		{Identity: procinspect.Identity{Pid: 12, Start: 160}, PPid: 11},
		{Identity: procinspect.Identity{Pid: 13, Start: 90}, PPid: 10}, // stale
	})
	for _, p := range tab.Descendants(procinspect.Identity{Pid: 10, Start: 100}) {
		fmt.Println(p.Identity)
	}
	fmt.Println(tab.Descendants(procinspect.Identity{Pid: 10, Start: 101}) == nil)
	// Output:
	// 11@150
	// 12@160
	// true
}
