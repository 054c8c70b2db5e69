package posix_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/subkit/subkit/internal/done"
	"github.com/subkit/subkit/internal/posix"
	"github.com/subkit/subkit/procinspect"
)

// A model test of a Tree's lifecycle against the real process table. Each input is a script
// of operations on one real tree: the leader and the members are actors, the test binary
// re-executed, each driven by the test over a connection of its own; they spawn members, leave
// their group (setsid, setpgid), re-enter it, exit in any order; the leader exits at any point,
// with a code or by a signal; the tree is signalled at any point. After each step the test
// checks what /proc shows against the model and the Tree against its invariants:
//
//  1. Gone closes only when no live process (zombies are not alive) has the group's pgid, and
//     it closes once that is so and the leader has exited;
//  2. while Gone is open the leader is not reaped: alive, or a zombie once it has exited;
//  3. after Gone, Signal signals nothing, even a process that re-entered the group's number;
//  4. Exit is the leader's real status, exit code or signal;
//  5. before Gone, Signal reaches every live member of the group (a member that cleared its
//     environment too) and the leader (wherever it is), and no process that left the group;
//  6. a member that left the group does not hold Gone open.
//
// Actors rather than shell scripts: an actor does one thing when told and answers once it is
// done, so each step ends in a known state (who is alive, in which group and session) and the
// checks wait on events (an answer, a pidfd becoming readable, Gone or Exited closing), never
// on guessed delays. The test binary is its own actor, so nothing outside it is needed, and a
// member may clear its environment and stay an actor (it is told its part in its arguments).
//
// The test process is made a child subreaper while an input runs, so the members orphaned by
// an exiting parent come to it: it reaps them (through their pidfds; never the leader, which
// is the Tree's) rather than leaving them to init, which may take seconds to, and so each
// input ends with none of its processes left in the table.

// lifecycleActorArg, as the first argument of the test binary, makes it an actor (see
// runLifecycleActor) instead of running tests: lifecycleActorArg <socket> <token>.
const lifecycleActorArg = "subkit-lifecycle-actor"

// lifecycleActorMode runs the test binary as an actor when its arguments say so (TestMain).
func lifecycleActorMode() {
	if len(os.Args) == 4 && os.Args[1] == lifecycleActorArg {
		runLifecycleActor(os.Args[2], os.Args[3])
	}
}

// runLifecycleActor connects to the test at sock, says who it is, then does what it is told,
// one line at a time, answering each (but exit) with a line:
//
//	ping                         pong
//	spawn <token> <clear> <reap> ok <pid>: a child actor, in this one's group and session, with
//	                             an empty environment if clear is 1, reaped by this one when it
//	                             exits if reap is 1 (else a zombie until this one is gone)
//	setsid                       ok, or err <why>
//	setpgid <pgid>               ok, or err <why>: setpgid(0, pgid)
//	exit <code>                  (no answer)
//
// It exits with syscall.Exit, which skips what a race-enabled binary does at exit (it waits a
// second there), so an exit is as quick as in any program. It exits when the test goes away.
func runLifecycleActor(sock, token string) {
	conn, err := net.Dial("unix", sock)
	if err != nil {
		syscall.Exit(125)
	}
	if _, err := fmt.Fprintf(conn, "hello %s %d\n", token, os.Getpid()); err != nil {
		syscall.Exit(125)
	}
	in := bufio.NewScanner(conn)
	for in.Scan() {
		f := strings.Fields(in.Text())
		if len(f) == 0 {
			continue
		}
		if _, err := fmt.Fprintln(conn, lcActorDo(sock, f)); err != nil {
			syscall.Exit(125)
		}
	}
	syscall.Exit(124)
}

func lcActorDo(sock string, f []string) string {
	result := func(err error) string {
		if err != nil {
			return "err " + err.Error()
		}
		return "ok"
	}
	arg := func(i int) int {
		if i >= len(f) {
			return 0
		}
		n, _ := strconv.Atoi(f[i])
		return n
	}
	switch f[0] {
	case "ping":
		return "pong"
	case "spawn":
		if len(f) != 4 {
			return "err bad spawn"
		}
		cmd := exec.Command("/proc/self/exe", lifecycleActorArg, sock, f[1])
		if f[2] == "1" {
			cmd.Env = []string{}
		}
		if err := cmd.Start(); err != nil {
			return result(err)
		}
		if f[3] == "1" {
			go cmd.Wait()
		}
		return "ok " + strconv.Itoa(cmd.Process.Pid)
	case "setsid":
		_, err := unix.Setsid()
		return result(err)
	case "setpgid":
		return result(unix.Setpgid(0, arg(1)))
	case "exit":
		syscall.Exit(arg(1))
	}
	return "err unknown request"
}

// The operations of a script. Each input byte that starts an operation picks its kind (modulo
// lcNumOps; a kind that cannot apply now gives way to lcSpawn, or else to the next kind that
// can), and the bytes after it its arguments (0 once the input is used up), as listed: a
// member is picked among the live members, in the order they were spawned.
const (
	lcSpawn      = iota // spawner (a live actor, leader first), flags (1: clear env, 2: don't reap)
	lcSetsid            // member
	lcOwnGroup          // member: setpgid(0, 0)
	lcJoin              // member, group: setpgid(0, g), g the tree's group, then live actors' ones
	lcMemberExit        // member, how: below 0x80 exit with that code, else SIGKILL
	lcLeaderExit        // how: below 0xf0 exit with that code, else SIGKILL (even) or SIGTERM (odd)
	lcSignal            // Tree.Signal: SIGKILL (even) or SIGTERM (odd)
	lcLeaderMove        // where: 0 setpgid(0, 0), 1 setsid, n setpgid into a live member's group
	lcNumOps
)

const (
	lcMaxOps     = 40 // operations run per input; the rest of a longer input is ignored
	lcMaxMembers = 20 // members spawned per input, at most: more than a Tree watches at once
	lcWait       = 10 * time.Second
)

func FuzzGroupLifecycle(f *testing.F) {
	for _, seed := range [][]byte{
		// Members outlive the leader (exit 3) and exit in the reverse of their order.
		{lcSpawn, 0, 0, lcSpawn, 0, 0, lcSpawn, 0, 0, lcLeaderExit, 3,
			lcMemberExit, 2, 0, lcMemberExit, 1, 0, lcMemberExit, 0, 0},
		// A member with a cleared environment, and its child, are reached by SIGTERM after the
		// leader has exited.
		{lcSpawn, 0, 1, lcSpawn, 1, 0, lcLeaderExit, 0, lcSignal, 1},
		// Members that leave (setsid, setpgid) after the leader has exited stop holding Gone
		// open; signalling the tree after Gone reaches neither.
		{lcSpawn, 0, 0, lcSpawn, 0, 0, lcLeaderExit, 7, lcSetsid, 0, lcOwnGroup, 1,
			lcSignal, 0, lcMemberExit, 0, 0, lcMemberExit, 0, 0},
		// Members that left before the leader exited do not hold Gone open either.
		{lcSpawn, 0, 0, lcSpawn, 0, 0, lcOwnGroup, 0, lcSetsid, 1, lcLeaderExit, 0xf0,
			lcSignal, 1, lcMemberExit, 1, 0x80},
		// A member leaves, spawns into its new group, re-enters; the leader dies of SIGTERM; the
		// re-entered member holds Gone open until SIGKILL, which spares its child.
		{lcSpawn, 0, 0, lcSpawn, 0, 0, lcOwnGroup, 0, lcSpawn, 1, 0, lcJoin, 0, 0,
			lcLeaderExit, 0xf1, lcMemberExit, 1, 0, lcSignal, 0},
		// An unreaped member's zombie keeps the group's number in use after Gone: a member that
		// left re-enters it, and signalling the gone tree must not reach it.
		{lcSpawn, 0, 0, lcSpawn, 1, 2, lcOwnGroup, 0, lcMemberExit, 1, 0, lcLeaderExit, 0,
			lcJoin, 0, 0, lcSignal, 0, lcMemberExit, 0, 5},
		// The leader moves into a member's group and spawns there; Signal still reaches it.
		{lcSpawn, 0, 0, lcOwnGroup, 0, lcLeaderMove, 2, lcSpawn, 0, 0, lcSignal, 0,
			lcMemberExit, 1, 0},
		// The leader leaves, then starts a session of its own, numbered as the group, and spawns
		// into it; members killed and exiting with codes.
		{lcSpawn, 0, 0, lcOwnGroup, 0, lcLeaderMove, 2, lcLeaderMove, 1, lcSpawn, 0, 1,
			lcSpawn, 2, 0, lcLeaderExit, 200, lcMemberExit, 1, 0x80, lcMemberExit, 1, 9,
			lcMemberExit, 0, 0},
		// The tree killed at once.
		{lcSignal, 0},
		// More members than the Tree watches at once: when those it watches have exited, the
		// one left still holds Gone open.
		append(append(slices.Repeat([]byte{lcSpawn, 0, 0}, 17), lcLeaderExit, 0),
			slices.Repeat([]byte{lcMemberExit, 0, 0}, 16)...),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m := newLcRun(t)
		in := lcScript(data)
		for i := 0; i < lcMaxOps && len(in) > 0; i++ {
			if m.gone && len(m.live()) == 0 {
				break // nothing is left to act or to be acted on
			}
			m.step(&in)
		}
		m.finish()
	})
}

// lcScript is what is left of an input.
type lcScript []byte

func (s *lcScript) next() int {
	if len(*s) == 0 {
		return 0
	}
	b := (*s)[0]
	*s = (*s)[1:]
	return int(b)
}

// lcActor is one process of the tree, as the model has it.
type lcActor struct {
	name   string
	id     procinspect.Identity
	fd     int // its pidfd, -1 until opened
	conn   net.Conn
	rd     *bufio.Reader
	leader bool
	noEnv  bool // has an empty environment (cleared, or inherited so): no marker finds it

	alive  bool   // the model's: not yet told to exit, nor signalled
	ending string // what is to end it, once it is not alive
	exited bool   // its pidfd has said it exited
	reaped bool   // reaped by the test (an adopted orphan), by the Tree (the leader), or seen gone
	pgid   int
	sid    int
}

// lcRun is one input's run: the tree, its actors, and the model.
type lcRun struct {
	t        *testing.T
	ctx      context.Context
	ln       *net.UnixListener
	sock     string // the listener's (abstract) address
	marker   string // NAME=VALUE in the leader's environment, inherited by members that keep it
	tr       *posix.Tree
	pgid     int
	leader   *lcActor
	actors   []*lcActor // the leader first, then the members in the order they were spawned
	wantExit posix.Exit
	gone     bool // Gone has been seen closed, and checked then
	done     bool // finish checked that nothing is left
	ops      []string
}

func newLcRun(t *testing.T) *lcRun {
	m := &lcRun{t: t, ctx: context.Background()}
	require.NoError(t, unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
	t.Cleanup(m.teardown)
	var b [12]byte
	rand.Read(b[:])
	tag := hex.EncodeToString(b[:])
	m.sock = "@subkit-lcRun-" + tag
	m.marker = "SUBKIT_LIFECYCLE_MARK=" + tag
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: m.sock, Net: "unix"})
	require.NoError(t, err)
	m.ln = ln

	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, lifecycleActorArg, m.sock, "leader")
	cmd.SysProcAttr = posix.SysProcAttr()
	cmd.Env = append(os.Environ(), m.marker)
	require.NoError(t, cmd.Start())
	m.pgid = cmd.Process.Pid // cmd.Process is the Tree's from here on
	m.tr = posix.NewTree(m.pgid, posix.WatchChild(cmd), nil, new(posix.Table))
	m.leader = m.record("leader", m.pgid)
	m.leader.leader = true
	require.Equal(t, m.pgid, m.tr.Pgid())
	sid, err := unix.Getsid(0)
	require.NoError(t, err)
	m.leader.pgid, m.leader.sid = m.pgid, sid
	m.connect(m.leader)
	m.sync()
	m.check()
	return m
}

// record records the actor just started as pid, with its pidfd, so that it is ended at
// teardown whatever happens next.
func (m *lcRun) record(name string, pid int) *lcActor {
	m.t.Helper()
	a := &lcActor{name: name, fd: -1, alive: true, id: procinspect.Identity{Pid: pid}}
	m.actors = append(m.actors, a)
	fd, err := unix.PidfdOpen(pid, 0)
	require.NoError(m.t, err, "pidfd of %s (%d)", name, pid)
	a.fd = fd
	return a
}

// connect takes the connection of a, just started, and reads its identity.
func (m *lcRun) connect(a *lcActor) {
	t := m.t
	t.Helper()
	name, pid := a.name, a.id.Pid
	require.NoError(t, m.ln.SetDeadline(time.Now().Add(lcWait)))
	c, err := m.ln.Accept()
	require.NoError(t, err, "%s (%d) did not connect", name, pid)
	a.conn, a.rd = c, bufio.NewReader(c)
	require.NoError(t, c.SetDeadline(time.Now().Add(lcWait)))
	hello, err := a.rd.ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, fmt.Sprintf("hello %s %d\n", name, pid), hello)
	p, err := procinspect.Lookup(m.ctx, pid)
	require.NoError(t, err)
	a.id = p.Identity
	env, err := procinspect.Environ(m.ctx, pid)
	require.NoError(t, err)
	if a.noEnv {
		require.Empty(t, env, "%s's environment", name)
	} else {
		require.Contains(t, env, m.marker, "%s's environment", name)
	}
}

func (m *lcRun) logf(format string, args ...any) {
	m.ops = append(m.ops, fmt.Sprintf(format, args...))
}

// call sends a request to a and returns its answer.
func (m *lcRun) call(a *lcActor, req string) string {
	m.t.Helper()
	ans, err := m.ask(a, req)
	require.NoError(m.t, err, "%s: %s", a.name, req)
	return ans
}

func (m *lcRun) ask(a *lcActor, req string) (string, error) {
	if err := a.conn.SetDeadline(time.Now().Add(lcWait)); err != nil {
		return "", err
	}
	if _, err := fmt.Fprintln(a.conn, req); err != nil {
		return "", err
	}
	if strings.HasPrefix(req, "exit ") {
		return "", nil
	}
	ans, err := a.rd.ReadString('\n')
	return strings.TrimSpace(ans), err
}

func (m *lcRun) live() []*lcActor {
	var out []*lcActor
	for _, a := range m.actors {
		if a.alive {
			out = append(out, a)
		}
	}
	return out
}

func (m *lcRun) liveMembers() []*lcActor {
	var out []*lcActor
	for _, a := range m.actors {
		if a.alive && !a.leader {
			out = append(out, a)
		}
	}
	return out
}

func lcPick[T any](from []T, i int) T { return from[i%len(from)] }

func (m *lcRun) applies(op int) bool {
	switch op {
	case lcSpawn:
		return len(m.actors)-1 < lcMaxMembers && len(m.live()) > 0
	case lcSetsid, lcOwnGroup, lcJoin, lcMemberExit:
		return len(m.liveMembers()) > 0
	case lcLeaderExit, lcLeaderMove:
		return m.leader.alive
	}
	return true // lcSignal
}

// step runs the next operation of the script, then checks the state it leads to.
func (m *lcRun) step(in *lcScript) {
	op := in.next() % lcNumOps
	if !m.applies(op) {
		op = lcSpawn // an operation on members with none yet spawns one
	}
	for !m.applies(op) {
		op = (op + 1) % lcNumOps
	}
	switch op {
	case lcSpawn:
		parent := lcPick(m.live(), in.next())
		flags := in.next()
		m.spawn(parent, flags&1 != 0, flags&2 != 0)
	case lcSetsid:
		m.setsid(lcPick(m.liveMembers(), in.next()))
	case lcOwnGroup:
		m.setpgid(lcPick(m.liveMembers(), in.next()), 0)
	case lcJoin:
		a := lcPick(m.liveMembers(), in.next())
		m.setpgid(a, lcPick(m.groupsBut(a.pgid), in.next()))
	case lcMemberExit:
		a := lcPick(m.liveMembers(), in.next())
		if how := in.next(); how < 0x80 {
			m.exit(a, how)
		} else {
			m.kill(a, unix.SIGKILL)
		}
	case lcLeaderExit:
		switch how := in.next(); {
		case how < 0xf0:
			m.exit(m.leader, how)
		case how%2 == 0:
			m.kill(m.leader, unix.SIGKILL)
		default:
			m.kill(m.leader, unix.SIGTERM)
		}
	case lcSignal:
		sig := unix.SIGKILL
		if in.next()%2 == 1 {
			sig = unix.SIGTERM
		}
		m.signal(sig)
	case lcLeaderMove:
		switch where := in.next(); where {
		case 0:
			m.setpgid(m.leader, 0)
		case 1:
			m.setsid(m.leader)
		default:
			var groups []int
			for _, a := range m.liveMembers() {
				if a.pgid != m.leader.pgid && !slices.Contains(groups, a.pgid) {
					groups = append(groups, a.pgid)
				}
			}
			if len(groups) == 0 {
				m.setpgid(m.leader, 0)
			} else {
				m.setpgid(m.leader, lcPick(groups, where-2))
			}
		}
	}
	m.sync()
	m.check()
}

// groupsBut lists the groups a member may move into: the tree's first, then the groups of the
// live actors, other than own.
func (m *lcRun) groupsBut(own int) []int {
	groups := []int{m.pgid}
	for _, a := range m.live() {
		if !slices.Contains(groups, a.pgid) {
			groups = append(groups, a.pgid)
		}
	}
	groups = slices.DeleteFunc(groups, func(g int) bool { return g == own })
	if len(groups) == 0 {
		return []int{own}
	}
	return groups
}

func (m *lcRun) spawn(parent *lcActor, clearEnv, noReap bool) {
	name := fmt.Sprintf("m%d", len(m.actors))
	m.logf("%s spawns %s (clear env %v, reaped %v)", parent.name, name, clearEnv, !noReap)
	ans := m.call(parent, fmt.Sprintf("spawn %s %d %d", name, lcBit(clearEnv), lcBit(!noReap)))
	pidText, ok := strings.CutPrefix(ans, "ok ")
	require.True(m.t, ok, "%s: spawn: %s", parent.name, ans)
	pid, err := strconv.Atoi(pidText)
	require.NoError(m.t, err)
	a := m.record(name, pid)
	a.pgid, a.sid, a.noEnv = parent.pgid, parent.sid, clearEnv || parent.noEnv
	m.connect(a)
}

func lcBit(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (m *lcRun) setsid(a *lcActor) {
	ans := m.call(a, "setsid")
	m.logf("%s: setsid: %s", a.name, ans)
	if ans == "ok" {
		a.pgid, a.sid = a.id.Pid, a.id.Pid
	}
}

func (m *lcRun) setpgid(a *lcActor, pgid int) {
	ans := m.call(a, "setpgid "+strconv.Itoa(pgid))
	m.logf("%s: setpgid %d (tree %d): %s", a.name, pgid, m.pgid, ans)
	if ans == "ok" {
		if pgid == 0 {
			pgid = a.id.Pid
		}
		a.pgid = pgid
	}
}

func (m *lcRun) exit(a *lcActor, code int) {
	m.logf("%s: exit %d", a.name, code)
	m.call(a, "exit "+strconv.Itoa(code))
	a.alive, a.ending = false, fmt.Sprintf("exit %d", code)
	if a.leader {
		m.wantExit = posix.Exit{Code: code}
	}
}

// kill signals a alone, through its pidfd.
func (m *lcRun) kill(a *lcActor, sig unix.Signal) {
	m.logf("%s: killed by %v", a.name, sig)
	require.NoError(m.t, unix.PidfdSendSignal(a.fd, sig, nil, 0))
	a.alive, a.ending = false, fmt.Sprintf("%v through its pidfd", sig)
	if a.leader {
		m.wantExit = posix.Exit{Code: -1, Signal: sig}
	}
}

// signal signals the tree. Before Gone that ends the live members of the group and the
// leader wherever it is (5); after Gone, nothing (3). That the others are spared, sync checks.
func (m *lcRun) signal(sig unix.Signal) {
	var ended []string
	if !m.gone {
		for _, a := range m.live() {
			if a.leader || a.pgid == m.pgid {
				a.alive, a.ending = false, fmt.Sprintf("(5) Signal(%v) before Gone", sig)
				ended = append(ended, a.name)
				if a.leader {
					m.wantExit = posix.Exit{Code: -1, Signal: sig}
				}
			}
		}
	}
	m.logf("Signal(%v), gone %v: ends %v", sig, m.gone, ended)
	require.NoError(m.t, m.tr.Signal(sig))
}

// sync waits for the exits the model expects, checks that every actor it has alive is alive,
// where it says, and reaps the adopted orphans that have exited.
func (m *lcRun) sync() {
	t := m.t
	t.Helper()
	var ending []*lcActor
	for _, a := range m.actors {
		if !a.alive && !a.exited {
			ending = append(ending, a)
		}
	}
	m.awaitExits(ending)
	tab, err := procinspect.Snapshot(m.ctx)
	require.NoError(t, err)
	for _, a := range m.live() {
		// An answer after the step proves it alive: a signal that ends it is pending before
		// the signalling call returns, and it runs nothing more.
		ans, err := m.ask(a, "ping")
		require.NoError(t, err, "%s was to live (a Signal must spare what left the group, "+
			"and after Gone everything (3)), and does not answer", a.name)
		require.Equal(t, "pong", ans, "%s", a.name)
		require.False(t, lcExitedNow(a.fd), "%s exited, and was to live", a.name)
		p, ok := tab.Get(a.id.Pid)
		require.True(t, ok, "%s is not in /proc", a.name)
		require.Equal(t, a.id, p.Identity, "%s", a.name)
		require.False(t, p.Zombie, "%s", a.name)
		require.Equal(t, [2]int{a.pgid, a.sid}, [2]int{p.Pgid, p.Sid}, "%s: [pgid sid]", a.name)
	}
	for _, a := range m.actors {
		if a.exited && !a.reaped && !a.leader && lcReap(a.fd) == nil {
			a.reaped = true
		}
	}
}

// check checks the Tree against what /proc shows.
func (m *lcRun) check() {
	t := m.t
	t.Helper()
	tab, err := procinspect.Snapshot(m.ctx)
	require.NoError(t, err)
	live := lcLivePids(tab, m.pgid)
	var want []int
	for _, a := range m.live() {
		if a.pgid == m.pgid {
			want = append(want, a.id.Pid)
		}
	}
	require.ElementsMatch(t, want, live, "the group's live members in /proc")

	if m.leader.alive {
		require.False(t, done.Closed(m.tr.Exited()), "Exited closed while the leader lives")
	} else {
		m.closedWithin(m.tr.Exited(), "Exited")
		e, err := m.tr.Exit()
		require.NoError(t, err)
		e.Usage = posix.Usage{} // the resource usage is checked elsewhere
		require.Equal(t, m.wantExit, e, "(4) the leader's status")
	}

	if !m.gone && !m.leader.alive && len(live) == 0 {
		m.closedWithin(m.tr.Gone(), "(6) Gone, once the leader has exited and no member is left")
		m.gone = true
		m.leader.reaped = true
		tab, err := procinspect.Snapshot(m.ctx)
		require.NoError(t, err)
		require.Empty(t, lcLivePids(tab, m.pgid), "(1) Gone with live members")
		require.NoError(t, m.tr.ReapErr())
		require.False(t, m.present(m.leader.id), "Gone with the leader not reaped")
	}
	if m.gone {
		assert.False(t, m.tr.Alive())
		ctx, cancel := context.WithTimeout(m.ctx, lcWait)
		defer cancel()
		require.NoError(t, m.tr.WaitGone(ctx))
		members, err := m.tr.Members(m.ctx)
		require.NoError(t, err)
		require.Empty(t, members, "Members after Gone")
		return
	}
	require.False(t, done.Closed(m.tr.Gone()), "(1) Gone closed while the group has members %v", live)
	assert.True(t, m.tr.Alive())
	ctx, cancel := context.WithCancel(m.ctx)
	cancel()
	require.ErrorIs(t, m.tr.WaitGone(ctx), context.Canceled, "(1) WaitGone while members are left")
	p, ok := tab.Get(m.leader.id.Pid)
	require.True(t, ok && p.Identity == m.leader.id, "(2) the leader was reaped before Gone")
	require.Equal(t, !m.leader.alive, p.Zombie, "(2) the leader is a zombie once it has exited")
	members, err := m.tr.Members(m.ctx)
	require.NoError(t, err)
	var got []int
	for _, p := range members {
		got = append(got, p.Pid)
	}
	require.ElementsMatch(t, live, got, "Members")
}

// finish ends the tree, the way its owner would, then everything that left it, and checks that
// nothing of the input is left.
func (m *lcRun) finish() {
	t := m.t
	if !m.gone {
		m.signal(unix.SIGKILL)
		m.sync()
		m.check()
	}
	require.True(t, m.gone, "SIGKILL through the tree leaves it gone")
	for _, a := range m.live() {
		m.kill(a, unix.SIGKILL)
	}
	m.sync()
	// Every actor has exited, so every orphan is the test's by now: each is reaped, or was
	// reaped by its parent (or, the leader, by the Tree).
	for _, a := range m.actors {
		if !a.reaped && lcReap(a.fd) == nil {
			a.reaped = true
		}
		require.False(t, m.present(a.id), "%s is still in /proc", a.name)
	}
	tab, err := procinspect.Snapshot(m.ctx)
	require.NoError(t, err)
	require.Empty(t, tab.Group(m.pgid), "processes left with the group's id")
	// Members that cleared their environment are accounted for above, by identity.
	for _, p := range tab.Procs() {
		if p.Start < m.leader.id.Start || p.Zombie || p.Pid == os.Getpid() {
			continue
		}
		if env, err := procinspect.Environ(m.ctx, p.Pid); err == nil {
			require.NotContains(t, env, m.marker, "pid %d (%s) has the marker", p.Pid, p.Comm)
		}
	}
	m.done = true
}

// teardown kills and reaps whatever a failed input left, then releases what it held.
func (m *lcRun) teardown() {
	t := m.t
	if t.Failed() {
		t.Logf("tree %d; operations:\n\t%s", m.pgid, strings.Join(m.ops, "\n\t"))
	}
	if !m.done {
		for _, a := range m.actors {
			if a.fd >= 0 && !lcExitedNow(a.fd) {
				unix.PidfdSendSignal(a.fd, unix.SIGKILL, nil, 0)
			}
		}
		deadline := time.Now().Add(lcWait)
		for _, a := range m.actors {
			for a.fd >= 0 && !lcExitedNow(a.fd) && time.Now().Before(deadline) {
				lcPollExit(a.fd, time.Until(deadline))
			}
		}
		for _, a := range m.actors {
			if a.fd >= 0 && !a.leader {
				lcReap(a.fd)
			}
		}
		if m.tr != nil {
			select {
			case <-m.tr.Gone():
			case <-time.After(lcWait):
				t.Errorf("teardown: tree %d not gone", m.pgid)
			}
		}
	}
	for _, a := range m.actors {
		if a.conn != nil {
			a.conn.Close()
		}
		if a.fd >= 0 {
			unix.Close(a.fd)
		}
	}
	if m.ln != nil {
		m.ln.Close()
	}
	unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)
}

// awaitExits waits until each of as has exited, as its pidfd tells.
func (m *lcRun) awaitExits(as []*lcActor) {
	t := m.t
	t.Helper()
	deadline := time.Now().Add(lcWait)
	for {
		var fds []unix.PollFd
		var waiting []*lcActor
		for _, a := range as {
			if !a.exited {
				fds = append(fds, unix.PollFd{Fd: int32(a.fd), Events: unix.POLLIN})
				waiting = append(waiting, a)
			}
		}
		if len(fds) == 0 {
			return
		}
		left := time.Until(deadline)
		if left <= 0 {
			var names []string
			for _, a := range waiting {
				names = append(names, a.name+" ("+a.ending+")")
			}
			require.Failf(t, "no exit", "%v still alive after %v", names, lcWait)
		}
		_, err := unix.Poll(fds, int(left/time.Millisecond)+1)
		if err != nil && err != unix.EINTR {
			require.NoError(t, err)
		}
		for i := range fds {
			if fds[i].Revents != 0 {
				waiting[i].exited = true
			}
		}
	}
}

func (m *lcRun) closedWithin(ch <-chan struct{}, what string) {
	m.t.Helper()
	select {
	case <-ch:
	case <-time.After(lcWait):
		require.Failf(m.t, "not closed", "%s: not within %v", what, lcWait)
	}
}

// present reports whether the process id names is still in the table (a zombie included).
func (m *lcRun) present(id procinspect.Identity) bool {
	m.t.Helper()
	p, err := procinspect.Lookup(m.ctx, id.Pid)
	if errors.Is(err, procinspect.ErrNotFound) {
		return false
	}
	require.NoError(m.t, err)
	return p.Identity == id
}

// livePids lists the live (not zombie) processes of group pgid.
func lcLivePids(tab *procinspect.Table, pgid int) []int {
	var out []int
	for _, p := range tab.Group(pgid) {
		if !p.Zombie {
			out = append(out, p.Pid)
		}
	}
	return out
}

// exitedNow reports whether the process of pidfd fd has exited.
func lcExitedNow(fd int) bool { return lcPollExit(fd, 0) }

// pollExit waits up to d for the process of pidfd fd to exit, and reports whether it has.
func lcPollExit(fd int, d time.Duration) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, int(d/time.Millisecond))
	return err == nil && n > 0
}

// reapPidfd reaps the process of pidfd fd if it is an exited child of the test (an adopted
// orphan); ECHILD when it is not the test's child, or already reaped.
func lcReap(fd int) error {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOHANG, nil)
		if err != unix.EINTR {
			return err
		}
	}
}
