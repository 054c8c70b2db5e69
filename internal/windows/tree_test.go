package windows

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAttachJobRoute(t *testing.T) {
	sys, c := newFakeSys()
	tr, _ := newTree(sys, c, &fakeRunner{})
	assert.Equal(t, RouteJob, tr.Route())
	assert.NoError(t, tr.JobErr())
	assert.NoError(t, tr.StartErr())
	assert.Equal(t, Identity{Pid: leaderPid, Start: 1000}, tr.Identity())
	// Identity first, then the job, and only then the leader runs.
	assert.Equal(t, []string{"ProcessStart 7", "CreateJob", "Assign 7", "Resume 7"}, c.list())
}

func TestAttachAssignRefusedFallsBackToTaskkill(t *testing.T) {
	sys, c := newFakeSys()
	sys.job.assignErr = ErrAccessDenied
	tr, _ := newTree(sys, c, &fakeRunner{})
	assert.Equal(t, RouteTaskkill, tr.Route())
	assert.ErrorIs(t, tr.JobErr(), ErrJobRefused)
	assert.ErrorIs(t, tr.JobErr(), ErrAccessDenied)
	assert.NoError(t, tr.StartErr(), "the leader still runs")
	assert.True(t, sys.job.closed, "the refused job is released")
	assert.Equal(t, []string{"ProcessStart 7", "CreateJob", "Assign 7", "CloseJob", "Resume 7"}, c.list())
}

func TestAttachCreateJobRefusedFallsBackToTaskkill(t *testing.T) {
	sys, c := newFakeSys()
	sys.createJobErr = errors.New("quota")
	tr, _ := newTree(sys, c, &fakeRunner{})
	assert.Equal(t, RouteTaskkill, tr.Route())
	assert.ErrorIs(t, tr.JobErr(), ErrJobRefused)
	assert.Equal(t, []string{"ProcessStart 7", "CreateJob", "Resume 7"}, c.list())
}

func TestAttachResumeFailureEndsTheLeader(t *testing.T) {
	t.Run("job route: the job is terminated", func(t *testing.T) {
		sys, c := newFakeSys()
		sys.resumeErr = errors.New("STATUS_ACCESS_DENIED")
		tr, _ := newTree(sys, c, &fakeRunner{})
		var e *Error
		require.ErrorAs(t, tr.StartErr(), &e)
		assert.Equal(t, "resume", e.Op)
		assert.Equal(t, []string{"TerminateJob 1", "CloseJob"}, c.list()[len(c.list())-2:],
			"the job is released: the caller drops a tree that failed to start")
		assert.False(t, c.has("KillLeader"))
		assert.False(t, tr.Alive())
		assert.Equal(t, []string{"TerminateJob 1", "CloseJob"}, c.list()[len(c.list())-2:], "no probe of a released job")
	})
	t.Run("job route: a failed terminate kills the leader and still releases the job", func(t *testing.T) {
		sys, c := newFakeSys()
		sys.resumeErr = errors.New("STATUS_ACCESS_DENIED")
		sys.job.terminateErr = errors.New("terminate refused")
		tr, _ := newTree(sys, c, &fakeRunner{})
		assert.Error(t, tr.StartErr())
		assert.Equal(t, []string{"TerminateJob 1", "CloseJob", "KillLeader"}, c.list()[len(c.list())-3:])
	})
	t.Run("job route: a failed close is reported", func(t *testing.T) {
		sys, c := newFakeSys()
		sys.resumeErr = errors.New("STATUS_ACCESS_DENIED")
		sys.job.closeErr = errors.New("close refused")
		tr, _ := newTree(sys, c, &fakeRunner{})
		assert.ErrorContains(t, tr.StartErr(), "STATUS_ACCESS_DENIED")
		assert.ErrorContains(t, tr.StartErr(), "close refused")
		assert.True(t, sys.job.closed)
	})
	t.Run("taskkill route: the leader is killed", func(t *testing.T) {
		sys, c := newFakeSys()
		sys.createJobErr = errors.New("no jobs")
		sys.resumeErr = errors.New("STATUS_ACCESS_DENIED")
		tr, _ := newTree(sys, c, &fakeRunner{})
		assert.Error(t, tr.StartErr())
		assert.Equal(t, "KillLeader", c.list()[len(c.list())-1])
	})
	t.Run("no handle: the leader is killed", func(t *testing.T) {
		sys, c := newFakeSys()
		l := &fakeLeader{c: c, waited: true}
		tr := attach(l, leaderPid, Config{Sys: sys, Runner: &fakeRunner{c: c}})
		assert.Error(t, tr.StartErr())
		assert.Equal(t, []string{"KillLeader"}, c.list())
		assert.Equal(t, RouteTaskkill, tr.Route())
		assert.ErrorIs(t, tr.Kill(), ErrIdentityUnknown, "no identity was read: never kill by pid")
		assert.False(t, c.has("taskkill"))
	})
	t.Run("a failed kill is reported too", func(t *testing.T) {
		sys, c := newFakeSys()
		sys.createJobErr = errors.New("no jobs")
		sys.resumeErr = errors.New("resume failed")
		l := &fakeLeader{c: c, killErr: errors.New("kill failed")}
		tr := attach(l, leaderPid, Config{Sys: sys, Runner: &fakeRunner{c: c}})
		assert.ErrorContains(t, tr.StartErr(), "resume failed")
		assert.ErrorContains(t, tr.StartErr(), "kill failed")
	})
}

func TestAttachNilProcess(t *testing.T) {
	sys, c := newFakeSys()
	tr := Attach(nil, Config{Sys: sys, Runner: &fakeRunner{c: c}})
	assert.ErrorIs(t, tr.StartErr(), ErrNoProcess)
	assert.ErrorIs(t, tr.Kill(), ErrIdentityUnknown)
	assert.NoError(t, tr.Term())
	assert.False(t, tr.Alive())
	assert.Empty(t, c.list(), "no OS call, no taskkill")
}

func TestKillJobRoute(t *testing.T) {
	sys, c := newFakeSys()
	r := &fakeRunner{}
	tr, _ := newTree(sys, c, r)
	require.NoError(t, tr.Kill())
	assert.True(t, c.has("TerminateJob 1"))
	assert.False(t, c.has("taskkill"), "the job route needs no taskkill")
	assert.False(t, c.has("OpenProcess"), "a job needs no pid fence")
	require.NoError(t, tr.WaitGone(context.Background()))
	assert.False(t, tr.Alive())
	// Gone: never acted on again.
	n := len(c.list())
	require.NoError(t, tr.Kill())
	require.NoError(t, tr.Interrupt())
	assert.False(t, tr.Alive())
	assert.Len(t, c.list(), n)
	assert.True(t, sys.job.closed, "the empty job is released")
}

func TestKillJobFailureFallsBackToTaskkill(t *testing.T) {
	sys, c := newFakeSys()
	sys.job.terminateErr = ErrAccessDenied
	tr, _ := newTree(sys, c, &fakeRunner{out: outSuccess})
	err := tr.Kill()
	require.Error(t, err, "the job's failure is reported even when taskkill worked")
	assert.ErrorIs(t, err, ErrAccessDenied)
	assert.True(t, c.has("taskkill /PID 4242 /T /F"))
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, RouteJob, e.Route)

	sys2, c2 := newFakeSys()
	sys2.job.terminateErr = errors.New("job broken")
	tr2, _ := newTree(sys2, c2, &fakeRunner{out: outDenied, code: 128})
	err = tr2.Kill()
	assert.ErrorContains(t, err, "job broken")
	assert.ErrorIs(t, err, ErrAccessDenied, "the fallback's failure is reported too")
}

// fallbackTree is a tree on the taskkill route (assignment refused).
func fallbackTree(r *fakeRunner) (*Tree, *fakeSys, *calls) {
	sys, c := newFakeSys()
	sys.job.assignErr = ErrAccessDenied
	tr, _ := newTree(sys, c, r)
	return tr, sys, c
}

func TestKillTaskkillRoute(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    fakeRunner
		want error // nil: gone
	}{
		{"success", fakeRunner{out: outSuccess}, nil},
		{"not found is gone", fakeRunner{out: outNotFound, code: 128}, nil},
		{"access denied is not success", fakeRunner{out: outDenied, code: 128}, ErrAccessDenied},
		{"missing binary", fakeRunner{code: -1, err: &notFoundErr{}}, ErrTaskkillMissing},
		{"unrecognised failure", fakeRunner{out: outCritical, code: 1}, ErrTaskkillFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.r
			tr, sys, c := fallbackTree(&r)
			r.during = func() { assert.False(t, sys.opened.closed, "the pid is held open while taskkill runs") }
			err := tr.Kill()
			assert.Equal(t, []string{"OpenProcess 4242", "ProcessStart(opened)", "taskkill /PID 4242 /T /F", "CloseProcess"},
				c.list()[len(c.list())-4:])
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tc.want)
			var e *Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, "kill", e.Op)
			assert.Equal(t, RouteTaskkill, e.Route)
			assert.Equal(t, leaderPid, e.Pid)
			assert.Equal(t, oneLine([]byte(r.out)), e.Output)
		})
	}
}

// notFoundErr stands for the error os/exec gives for a missing binary.
type notFoundErr struct{}

func (*notFoundErr) Error() string { return "exec: file does not exist" }
func (*notFoundErr) Unwrap() error { return ErrTaskkillMissing }

func TestIdentityFence(t *testing.T) {
	t.Run("creation time changed: no kill", func(t *testing.T) {
		tr, sys, c := fallbackTree(&fakeRunner{})
		sys.openStart = 2000 // the pid now names a younger process
		err := tr.Kill()
		require.ErrorIs(t, err, ErrIdentityChanged)
		assert.False(t, c.has("taskkill"))
		assert.True(t, sys.opened.closed)
	})
	t.Run("pid gone: nothing to kill, no error", func(t *testing.T) {
		tr, sys, c := fallbackTree(&fakeRunner{})
		sys.openErr = ErrNoProcess
		require.NoError(t, tr.Kill())
		assert.False(t, c.has("taskkill"))
	})
	t.Run("pid cannot be opened: no kill", func(t *testing.T) {
		tr, sys, c := fallbackTree(&fakeRunner{})
		sys.openErr = ErrAccessDenied
		err := tr.Kill()
		require.ErrorIs(t, err, ErrIdentityUnknown)
		assert.ErrorIs(t, err, ErrAccessDenied)
		assert.False(t, c.has("taskkill"))
	})
	t.Run("creation time unreadable now: no kill", func(t *testing.T) {
		tr, sys, c := fallbackTree(&fakeRunner{})
		sys.openStartErr = errors.New("GetProcessTimes failed")
		require.ErrorIs(t, tr.Kill(), ErrIdentityUnknown)
		assert.False(t, c.has("taskkill"))
		assert.True(t, sys.opened.closed)
	})
	t.Run("creation time not recorded at spawn: no kill by pid", func(t *testing.T) {
		sys, c := newFakeSys()
		sys.startErr = errors.New("GetProcessTimes failed")
		sys.createJobErr = errors.New("no jobs")
		tr, _ := newTree(sys, c, &fakeRunner{})
		require.ErrorIs(t, tr.Kill(), ErrIdentityUnknown)
		assert.False(t, c.has("OpenProcess"))
		assert.False(t, c.has("taskkill"))
	})
}

func TestAliveJobAccounting(t *testing.T) {
	sys, c := newFakeSys()
	sys.job.active = []int{3, 1, 0, 2} // the 2 must never be seen: the job latches gone
	tr, _ := newTree(sys, c, &fakeRunner{})
	assert.True(t, tr.Alive())
	assert.True(t, tr.Alive())
	assert.False(t, tr.Alive())
	assert.True(t, sys.job.closed)
	assert.False(t, tr.Alive())
	assert.Equal(t, 3, sys.job.probes)
}

func TestAliveTaskkillRouteIsDirectChildOnly(t *testing.T) {
	tr, _, c := fallbackTree(&fakeRunner{})
	assert.False(t, tr.Alive())
	require.NoError(t, tr.WaitGone(context.Background()))
	assert.False(t, c.has("ActiveProcesses"))
}

func TestWaitGone(t *testing.T) {
	t.Run("returns once the job is empty", func(t *testing.T) {
		sys, c := newFakeSys()
		sys.job.active = []int{2, 2, 1, 0}
		tr, _ := newTree(sys, c, &fakeRunner{})
		require.NoError(t, tr.WaitGone(context.Background()))
		assert.Equal(t, 4, sys.job.probes)
	})
	t.Run("ctx ends first", func(t *testing.T) {
		sys, c := newFakeSys()
		tr, _ := newTree(sys, c, &fakeRunner{})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		require.ErrorIs(t, tr.WaitGone(ctx), context.DeadlineExceeded)
		assert.True(t, tr.Alive())
	})
	t.Run("a failed probe is returned, and counts as alive", func(t *testing.T) {
		sys, c := newFakeSys()
		sys.job.activeErr = errors.New("invalid handle")
		tr, _ := newTree(sys, c, &fakeRunner{})
		err := tr.WaitGone(context.Background())
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, "probe", e.Op)
		assert.True(t, tr.Alive())
	})
}

func TestTermAndInterrupt(t *testing.T) {
	t.Run("Ctrl-Break to the leader's group while it runs", func(t *testing.T) {
		sys, c := newFakeSys()
		tr, _ := newTree(sys, c, &fakeRunner{})
		require.NoError(t, tr.Term())
		require.NoError(t, tr.Interrupt())
		assert.Equal(t, []string{"Exited 7", "CtrlBreak 4242"}, c.list()[len(c.list())-2:])
	})
	t.Run("no console: Term is nil, Interrupt reports", func(t *testing.T) {
		sys, c := newFakeSys()
		sys.ctrlBreakErr = errors.New("The handle is invalid.")
		tr, _ := newTree(sys, c, &fakeRunner{})
		require.NoError(t, tr.Term())
		err := tr.Interrupt()
		assert.ErrorContains(t, err, "The handle is invalid.")
		var e *Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, "interrupt", e.Op)
	})
	t.Run("leader exited: no event", func(t *testing.T) {
		sys, c := newFakeSys()
		sys.exited = true
		tr, _ := newTree(sys, c, &fakeRunner{})
		require.NoError(t, tr.Term())
		assert.ErrorIs(t, tr.Interrupt(), ErrNoProcess)
		assert.False(t, c.has("CtrlBreak"))
	})
	t.Run("leader waited for: no event", func(t *testing.T) {
		sys, c := newFakeSys()
		tr, l := newTree(sys, c, &fakeRunner{})
		l.waited = true
		require.NoError(t, tr.Term())
		assert.ErrorIs(t, tr.Interrupt(), ErrNoProcess)
		assert.False(t, c.has("CtrlBreak"))
	})
	t.Run("leader state unknown: no event", func(t *testing.T) {
		sys, c := newFakeSys()
		sys.exitedErr = errors.New("wait failed")
		tr, _ := newTree(sys, c, &fakeRunner{})
		assert.ErrorContains(t, tr.Interrupt(), "wait failed")
		assert.False(t, c.has("CtrlBreak"))
	})
	t.Run("never group 0", func(t *testing.T) {
		sys, c := newFakeSys()
		tr := attach(&fakeLeader{c: c}, 0, Config{Sys: sys, Runner: &fakeRunner{c: c}})
		require.NoError(t, tr.Term())
		assert.ErrorIs(t, tr.Interrupt(), ErrNoProcess)
		assert.False(t, c.has("CtrlBreak"))
	})
}

func TestConcurrentUse(t *testing.T) {
	sys, c := newFakeSys()
	sys.job.active = []int{5, 4, 3, 2, 1}
	tr, _ := newTree(sys, c, &fakeRunner{})
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for range 50 {
				tr.Alive()
				tr.Term()
			}
		}()
	}
	require.NoError(t, tr.Kill())
	for range 4 {
		<-done
	}
	require.NoError(t, tr.WaitGone(context.Background()))
}

func TestErrorMessage(t *testing.T) {
	e := &Error{Op: "kill", Route: RouteTaskkill, Pid: 42, Err: ErrAccessDenied, Output: "ERROR: x"}
	assert.Equal(t, `windows: kill pid 42 (taskkill route): access denied; taskkill said "ERROR: x"`, e.Error())
	assert.Equal(t, "Route(9)", Route(9).String())
}
