//go:build !unix

package main

import (
	"context"
	"errors"
	"time"

	"github.com/subkit/subkit/procinspect"
)

// errKillUnsupported: process_kill has no implementation on this platform.
var errKillUnsupported = errors.New("process_kill is POSIX only: Windows has no identity-fenced way to end one " +
	"process here; end a command with bash_stop, a shell's with shell_interrupt or shell_close")

// errStillPresent is never wrapped here.
var errStillPresent = errors.New("still present")

// endProcess is not implemented on this platform.
func endProcess(context.Context, procinspect.Identity, string, time.Duration) (ended, error) {
	return ended{}, errKillUnsupported
}

// kitHelper: no guard on this platform.
func kitHelper(context.Context, int) (bool, error) { return false, nil }
