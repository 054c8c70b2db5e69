//go:build unix

package posix

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
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
	table *Table // what Find remembers between calls, or nil
}

// ReadThrough makes Find remember, in t, what never changes about the processes it reads, so
// later Finds of any cookie read through t cost less. It returns c.
func (c *Cookie) ReadThrough(t *Table) *Cookie {
	c.table = t
	return c
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
//
// A process is found when its environment holds the cookie's NAME= entry, it runs as this
// user, it started no earlier than the cookie's start token and it is not in group skipPgid.
// Only the processes that pass the owner and start tests, which cost no environment read,
// have their environment read. An error about one process (other than its being gone, or not
// readable by this user) is returned along with what was found.
func (c *Cookie) Find(ctx context.Context, skipPgid int) ([]procinspect.Identity, error) {
	return c.find(ctx, skipPgid, nil)
}

// findStats records what one Find did, for tests. A nil *findStats records nothing.
type findStats struct {
	environReads map[int]int   // pid -> reads of its environment
	relooked     []int         // pids looked at again, once per round, after a pause
	paused       time.Duration // total pause before second looks at environments read mid-execve
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
		if len(found) > 0 {
			// What was found is ended even when the read of some other process failed.
			err = errors.Join(err, EndAll(ctx, found, grace))
		}
		if err != nil || len(found) == 0 {
			return err
		}
	}
	found, err := c.Find(ctx, 0)
	if err == nil && len(found) > 0 {
		err = fmt.Errorf("posix: processes carrying %s keep appearing after %d sweeps: %v", c.name, sweepRounds, found)
	}
	return err
}

// EndAll sends SIGTERM (and SIGCONT) to ids, then SIGKILL to those left after grace, and
// waits until they are gone or ctx ends. It overwrites ids.
func EndAll(ctx context.Context, ids []procinspect.Identity, grace time.Duration) error {
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
