//go:build unix

package posix

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/procinspect"
)

// CookiePrefix starts the name of the environment variable that marks every process of a
// tree. Each tree gets a variable of its own (SUBKIT_TREE_<random>=<start token>), so a process started
// inside a nested tree carries the cookies of every tree around it.
const CookiePrefix = "SUBKIT_TREE_"

// Cookie marks one tree: processes whose environment holds it, of this user, and started no
// earlier than the tree's leader belong to the tree even after they left its process group
// and session (setsid, double fork). A process that clears or rewrites its environment before
// exec is not found: that is the limit of the method.
type Cookie struct {
	name  string // "SUBKIT_TREE_<hex>"
	since uint64 // start token of now at creation: older processes are never matched
}

// NewCookie returns a fresh cookie. Make it before starting the processes it marks: only
// processes started after it are matched.
func NewCookie() *Cookie {
	b := make([]byte, 12)
	rand.Read(b)
	return &Cookie{name: CookiePrefix + hex.EncodeToString(b), since: startTokenNow()}
}

// Env is the NAME=VALUE entry to put in the leader's environment; the value is the start
// token the cookie was made at, so CookieFromEnv gives back the same cookie.
func (c *Cookie) Env() string { return c.name + "=" + strconv.FormatUint(c.since, 10) }

// Find lists the live processes of this user that carry the cookie, except those in skip
// (a process group already handled by other means). It finds nothing where process
// environments cannot be read (only Linux is supported).
func (c *Cookie) Find(ctx context.Context, skipPgid int) ([]procinspect.Identity, error) {
	if !canReadEnviron {
		return nil, nil
	}
	tab, err := procinspect.Snapshot(ctx)
	if err != nil {
		return nil, err
	}
	want := c.name + "="
	var found []procinspect.Identity
	for _, p := range tab.Procs() {
		if p.Start < c.since || p.Pgid == skipPgid || !sameUser(p.Pid) {
			continue
		}
		env, err := procinspect.Environ(ctx, p.Pid)
		if err == nil && len(env) == 0 && !p.Zombie {
			// A process in the middle of execve reads as empty for a moment.
			time.Sleep(time.Millisecond)
			env, err = procinspect.Environ(ctx, p.Pid)
		}
		if err != nil {
			continue // gone, or not ours to read
		}
		for _, kv := range env {
			if strings.HasPrefix(kv, want) {
				found = append(found, p.Identity)
				break
			}
		}
	}
	return found, nil
}

// CookieFromEnv returns the cookie of an entry made by Env, or nil.
func CookieFromEnv(entry string) *Cookie {
	name, value, ok := strings.Cut(entry, "=")
	if !ok || !strings.HasPrefix(name, CookiePrefix) {
		return nil
	}
	since, _ := strconv.ParseUint(value, 10, 64)
	return &Cookie{name: name, since: since}
}

// sweepRounds bounds SweepCookie: each round ends what one read of the table found, and a
// round is needed again only when those processes started others meanwhile.
const sweepRounds = 5

// SweepCookie ends every process carrying c: SIGTERM (and SIGCONT), then SIGKILL to those
// left after grace, all identity-fenced. Processes may start others while they are being
// ended, so it looks again until a read of the table finds none (at most sweepRounds). It
// returns once they are gone or ctx ends.
func SweepCookie(ctx context.Context, c *Cookie, grace time.Duration) error {
	for range sweepRounds {
		found, err := c.Find(ctx, 0)
		if err != nil || len(found) == 0 {
			return err
		}
		if err := endAll(ctx, found, grace); err != nil {
			return err
		}
	}
	found, err := c.Find(ctx, 0)
	if err == nil && len(found) > 0 {
		err = fmt.Errorf("posix: processes carrying %s keep appearing after %d sweeps: %v", c.name, sweepRounds, found)
	}
	return err
}

// endAll sends SIGTERM (and SIGCONT) to ids, then SIGKILL to those left after grace, and
// waits until they are gone or ctx ends.
func endAll(ctx context.Context, ids []procinspect.Identity, grace time.Duration) error {
	SignalAll(ctx, ids, unix.SIGTERM)
	SignalAll(ctx, ids, unix.SIGCONT)
	live := func() bool {
		n := 0
		for _, id := range ids {
			if ok, _ := procinspect.Alive(ctx, id); ok {
				ids[n] = id
				n++
			}
		}
		ids = ids[:n]
		return n > 0
	}
	gctx, cancel := context.WithTimeout(ctx, grace)
	poll(gctx, live)
	cancel()
	if len(ids) == 0 {
		return nil
	}
	if err := SignalAll(ctx, ids, unix.SIGKILL); err != nil {
		return err
	}
	return poll(ctx, live)
}
