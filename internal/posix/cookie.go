//go:build unix

package posix

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/internal/ending"
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

// SweepCookie ends every process carrying c under policy p: Stop, then Kill to those left
// after the grace, all identity-fenced. Processes may start others while they are being
// ended, so it looks again until a read of the table finds none (at most ending.MaxRounds
// rounds). It returns once they are gone or ctx ends.
func SweepCookie(ctx context.Context, c *Cookie, p ending.Policy) error {
	t, err := c.Carriers(ctx)
	if t == nil {
		return err
	}
	// What was found is ended even when the read of some other process failed.
	return errors.Join(err, p.End(ctx, t))
}

// Carriers returns the processes that carry c now as a target to end (nil when there are
// none), with the error of a read that failed; it may return both. The target rediscovers
// the carriers that appeared since, so ending.Policy.End ends them in rounds.
func (c *Cookie) Carriers(ctx context.Context) (ending.Target, error) {
	found, err := c.Find(ctx, 0)
	if len(found) == 0 {
		return nil, err
	}
	return &carriers{Procs: Procs{ids: found}, c: c}, err
}

type carriers struct {
	Procs
	c *Cookie
}

func (t *carriers) Rediscover(ctx context.Context) (ending.Target, error) {
	return t.c.Carriers(ctx)
}

// Procs is an ending.Target of processes named by exact identity: each is signalled only
// while its pid still names the process that started at its start token, so a reused pid is
// never signalled.
type Procs struct {
	ids []procinspect.Identity
}

// NewProcs returns the target of ids, which it takes over.
func NewProcs(ids []procinspect.Identity) *Procs { return &Procs{ids: ids} }

// Signal sends SIGTERM and SIGCONT (so a stopped process can act on it) for ending.Stop, and
// SIGKILL for ending.Kill, to every process still alive.
func (p *Procs) Signal(ctx context.Context, s ending.Step) error {
	return SignalStep(ctx, p.ids, s)
}

// SignalStep sends the signals of step s to each identity still alive: SIGTERM and SIGCONT
// for ending.Stop, SIGKILL for ending.Kill.
func SignalStep(ctx context.Context, ids []procinspect.Identity, s ending.Step) error {
	if s == ending.Kill {
		return SignalAll(ctx, ids, unix.SIGKILL)
	}
	return errors.Join(SignalAll(ctx, ids, unix.SIGTERM), SignalAll(ctx, ids, unix.SIGCONT))
}

// Alive drops the processes that are gone and reports whether any is left; a process that
// could not be looked at counts as alive, and the error is returned.
func (p *Procs) Alive(ctx context.Context) (bool, error) {
	var errs []error
	n := 0
	for _, id := range p.ids {
		ok, err := procinspect.Alive(ctx, id)
		if err != nil {
			errs = append(errs, err)
		}
		if ok || err != nil {
			p.ids[n] = id
			n++
		}
	}
	p.ids = p.ids[:n]
	return n > 0, errors.Join(errs...)
}

// Left lists the processes Alive last saw alive.
func (p *Procs) Left() []procinspect.Identity { return p.ids }
